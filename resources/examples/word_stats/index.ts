interface Args {
  text: string;
  top?: number;
}

export default async function (args: Args) {
  const words = args.text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
  const counts = new Map<string, number>();
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  const topWords = [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, args.top ?? 5)
    .map(([word, count]) => ({ word, count }));
  return {
    words: words.length,
    sentences: args.text.split(/[.!?]+/).filter((s) => s.trim() !== '').length,
    characters: [...args.text].length,
    topWords,
  };
}
