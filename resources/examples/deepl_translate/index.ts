interface Args {
  text: string;
  target: string;
}

export default async function (args: Args, ctx: any) {
  const res = await ctx.fetch('https://api-free.deepl.com/v2/translate', {
    method: 'POST',
    credential: 'deepl',
    json: { text: [args.text], target_lang: args.target.toUpperCase() },
  });
  if (!res.ok) throw new Error(`DeepL answered ${res.status}: ${await res.text()}`);
  const body = await res.json();
  return { text: body.translations[0].text, detectedSource: body.translations[0].detected_source_language };
}
