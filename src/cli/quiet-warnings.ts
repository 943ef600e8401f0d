/**
 * grpc-js sends the host it dials as the TLS server name, an IP address included, and Node warns
 * once per process that this is deprecated (DEP0123). A TLS connection to 127.0.0.1 is nothing a
 * user of the command line (or a reader of a server's JSON log on stderr) should be told about:
 * the command-line entry points drop that one warning and keep every other.
 */
export function dropIpServerNameWarning(): void {
  // Kept as a plain function and called below with the `this` the replacement is called with.
  const { emitWarning } = process as { emitWarning: (this: NodeJS.Process, ...args: unknown[]) => void };
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]): void {
    const [typeOrOptions, code] = rest;
    const warningCode = typeof typeOrOptions === "object" && typeOrOptions !== null ? (typeOrOptions as { code?: unknown }).code : code;
    if (warningCode === "DEP0123") return;
    return emitWarning.call(this, warning, ...rest);
  };
}
