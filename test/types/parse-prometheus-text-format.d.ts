/** The shape of parse-prometheus-text-format's answer (the package ships no types): prom2json's. */
declare module "parse-prometheus-text-format" {
  interface PrometheusSample {
    value?: string;
    labels?: Record<string, string>;
    /** Summaries. */
    quantiles?: Record<string, string>;
    /** Histograms. */
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  interface PrometheusFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "SUMMARY" | "HISTOGRAM" | "UNTYPED";
    metrics: PrometheusSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[];
}
