/**
 * Replaces every occurrence of the run's secrets (raw, JSON-escaped, URL-encoded and base64 forms)
 * in text leaving a run: logs, traces, results, error messages.
 */
export class Redactor {
  readonly #needles: Array<{ needle: string; label: string }> = [];

  add(name: string, secret: string): void {
    if (secret.length < 4) return;
    const label = `[redacted:${name}]`;
    const forms = new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret), Buffer.from(secret).toString('base64')]);
    for (const needle of forms) if (!this.#needles.some((n) => n.needle === needle)) this.#needles.push({ needle, label });
    this.#needles.sort((a, b) => b.needle.length - a.needle.length);
  }

  get active(): boolean {
    return this.#needles.length > 0;
  }

  text(value: string): string {
    let out = value;
    for (const { needle, label } of this.#needles) if (out.includes(needle)) out = out.split(needle).join(label);
    return out;
  }

  /** Redacts inside any JSON value by redacting its serialized form. */
  json<T>(value: T): T {
    if (!this.active || value === undefined) return value;
    const text = JSON.stringify(value);
    const redacted = this.text(text);
    return redacted === text ? value : (JSON.parse(redacted) as T);
  }
}
