/**
 * A TCP proxy on 127.0.0.1 that a test can cut: every open connection is destroyed at once. With
 * `capture`, it also keeps every byte it forwards, both ways (a sniffer on the link).
 */
import { connect, createServer, type Server, type Socket } from "node:net";

export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private refusing = false;
  private readonly chunks: Buffer[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number, options: { capture?: boolean } = {}): Promise<TcpProxy> {
    // Set once the server listens; a connection handled before then is refused.
    let proxy: TcpProxy | undefined = undefined;
    const server = createServer((inbound) => {
      if (!proxy || proxy.refusing) {
        inbound.destroy();
        return;
      }
      const outbound = connect({ host: "127.0.0.1", port: targetPort });
      proxy.track(inbound);
      proxy.track(outbound);
      if (options.capture) {
        inbound.on("data", (chunk: Buffer) => proxy!.chunks.push(chunk));
        outbound.on("data", (chunk: Buffer) => proxy!.chunks.push(chunk));
      }
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      inbound.on("error", () => outbound.destroy());
      outbound.on("error", () => inbound.destroy());
      inbound.on("close", () => outbound.destroy());
      outbound.on("close", () => inbound.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    proxy = new TcpProxy(server, typeof address === "object" && address ? address.port : 0);
    return proxy;
  }

  /** Every byte forwarded so far, both directions (with `capture`). */
  captured(): Buffer {
    return Buffer.concat(this.chunks);
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
  }

  /** Destroy every connection through the proxy; new ones are accepted unless `refuse` is set. */
  cut(refuse = false): void {
    this.refusing = refuse;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  heal(): void {
    this.refusing = false;
  }

  async close(): Promise<void> {
    this.cut(true);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
