/**
 * A server's /metrics, read the way Prometheus reads it: the text is parsed by
 * parse-prometheus-text-format (a port of Prometheus' prom2json), never by a regex of ours.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";

export class Scrape {
  private constructor(
    readonly text: string,
    private readonly families: ReturnType<typeof parsePrometheusTextFormat>,
  ) {}

  static async of(metricsUrl: string): Promise<Scrape> {
    const response = await fetch(`${metricsUrl}/metrics`);
    if (response.status !== 200) throw new Error(`${metricsUrl}/metrics answered ${response.status}`);
    const text = await response.text();
    return new Scrape(text, parsePrometheusTextFormat(text));
  }

  has(name: string): boolean {
    return this.families.some((f) => f.name === name);
  }

  type(name: string): string {
    return this.family(name).type;
  }

  /** A counter's or gauge's value, of the sample whose labels include `labels`. */
  value(name: string, labels: Record<string, string> = {}): number {
    const sample = this.family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
    if (sample?.value === undefined) throw new Error(`no sample of ${name} ${JSON.stringify(labels)} in:\n${this.text}`);
    return Number(sample.value);
  }

  /** Every sample of a labelled gauge or counter: label value of `label` → value. */
  byLabel(name: string, label: string): Map<string, number> {
    return new Map(this.family(name).metrics.map((m) => [m.labels?.[label] ?? "", Number(m.value)]));
  }

  /** A summary's count, sum and quantiles. */
  summary(name: string): { count: number; sum: number; quantiles: Map<number, number> } {
    const family = this.family(name);
    if (family.type !== "SUMMARY") throw new Error(`${name} is a ${family.type}, not a summary`);
    const sample = family.metrics[0]!;
    return {
      count: Number(sample.count),
      sum: Number(sample.sum),
      quantiles: new Map(Object.entries(sample.quantiles ?? {}).map(([q, v]) => [Number(q), Number(v)])),
    };
  }

  private family(name: string) {
    const family = this.families.find((f) => f.name === name);
    if (!family) throw new Error(`no metric ${name} in:\n${this.text}`);
    return family;
  }
}

/** GET <adminUrl><path>: status and parsed JSON (64-bit numbers lose precision past 2^53, as in any JSON.parse). */
export async function adminGet(adminUrl: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${adminUrl}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The answer of /commands/<name> on a server's admin port. */
export async function adminCommand(adminUrl: string, name: string): Promise<Record<string, unknown>> {
  const { status, body } = await adminGet(adminUrl, `/commands/${name}`);
  if (status !== 200) throw new Error(`/commands/${name} answered ${status}`);
  return body;
}
