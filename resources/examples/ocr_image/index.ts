interface Args {
  imageUrl: string;
  language?: string;
}

export default async function (args: Args, ctx: any) {
  const form = new URLSearchParams({ url: args.imageUrl, language: args.language ?? 'eng', OCREngine: '2' });
  const res = await ctx.fetch('https://api.ocr.space/parse/image', { method: 'POST', credential: 'ocrspace', body: form });
  const body = await res.json();
  if (body.IsErroredOnProcessing) throw new Error(`OCR failed: ${[].concat(body.ErrorMessage ?? 'unknown error').join('; ')}`);
  const pages = body.ParsedResults ?? [];
  ctx.log(`read ${pages.length} page(s)`);
  return { text: pages.map((p: { ParsedText: string }) => p.ParsedText).join('\n').trim() };
}
