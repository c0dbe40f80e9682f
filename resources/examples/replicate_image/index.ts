interface Args {
  prompt: string;
  model?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export default async function (args: Args, ctx: any) {
  const model = args.model ?? 'black-forest-labs/flux-schnell';
  const created = await ctx.fetch(`https://api.replicate.com/v1/models/${model}/predictions`, {
    method: 'POST',
    credential: 'replicate',
    json: { input: { prompt: args.prompt } },
  });
  let prediction = await created.json();
  if (!created.ok) throw new Error(`Replicate answered ${created.status}: ${prediction.detail ?? JSON.stringify(prediction)}`);
  for (let poll = 1; prediction.status !== 'succeeded'; poll++) {
    if (prediction.status === 'failed' || prediction.status === 'canceled') throw new Error(`prediction ${prediction.status}: ${prediction.error ?? ''}`);
    ctx.progress(poll, undefined, `prediction ${prediction.status}`);
    await sleep(1000);
    prediction = await (await ctx.fetch(prediction.urls.get, { credential: 'replicate' })).json();
  }
  const url = [].concat(prediction.output)[0] as string;
  const image = await ctx.fetch(url);
  return ctx.content.image(await image.bytes(), image.headers.get('content-type') ?? 'image/webp');
}
