/**
 * LinkProxy: one directed network link of a chaos cluster — a TCP proxy on 127.0.0.1 that the
 * nemesis can cut in either direction or slow down.
 *
 * "Forward" is the direction from the side that dialled (a server calling a peer, a client
 * calling a server) to the side that listens; "backward" is the answers. A blocked direction
 * behaves like a firewall that drops packets on an established TCP connection: nothing is lost
 * or corrupted (TCP would retransmit), it just stops arriving — the proxy stops reading, so
 * backpressure reaches the sender — until the block lifts, when everything held back flows in
 * order. A connection closed behind a block is reported to the other side only when the block
 * lifts, as a FIN would be. New connections are accepted but carry nothing across a block, like a
 * handshake that stalls. Whatever notices the silence first (gRPC keepalive, Zab's syncLimit, a
 * client's ping) is what the cluster must rely on, as it must on a real network.
 *
 * Delay holds every chunk for a fixed time before forwarding it, keeping order.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

const END = Symbol("end");
const DESTROY = Symbol("destroy");
type Item = { chunk: Buffer | typeof END | typeof DESTROY; dueAt: number };

/** One direction of one proxied connection. */
class Pipe {
  private readonly queue: Item[] = [];
  private timer: NodeJS.Timeout | undefined;
  private waitingForDrain = false;
  private done = false;

  constructor(
    private readonly source: Socket,
    private readonly sink: Socket,
    private readonly gate: () => { blocked: boolean; delayMs: number },
  ) {
    source.on("data", (chunk: Buffer) => this.push(chunk));
    source.on("end", () => this.push(END));
    source.on("close", () => this.push(DESTROY));
    source.on("error", () => undefined); // 'close' follows; the peer learns of it through the gate
    sink.on("drain", () => {
      this.waitingForDrain = false;
      this.pump();
    });
  }

  private push(chunk: Item["chunk"]): void {
    if (this.done) return;
    this.queue.push({ chunk, dueAt: Date.now() + this.gate().delayMs });
    this.pump();
  }

  /** Forwards whatever the gate lets through now; called on data, on drain and on every gate change. */
  pump(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const { blocked } = this.gate();
    while (!this.done && !blocked && !this.waitingForDrain && this.queue.length > 0) {
      const head = this.queue[0]!;
      const wait = head.dueAt - Date.now();
      if (wait > 0) {
        this.timer = setTimeout(() => this.pump(), wait);
        break;
      }
      this.queue.shift();
      if (head.chunk === END) {
        this.sink.end();
      } else if (head.chunk === DESTROY) {
        this.done = true;
        // Whatever was forwarded still reaches the other side before it learns of the close.
        this.sink.destroySoon();
      } else if (!this.sink.destroyed && !this.sink.write(head.chunk)) {
        this.waitingForDrain = true;
      }
    }
    const hold = blocked || this.waitingForDrain || this.queue.length > 0;
    if (hold) this.source.pause();
    else if (!this.source.destroyed) this.source.resume();
  }

  stop(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

export class LinkProxy {
  private blockedForward = false;
  private blockedBackward = false;
  private delayMs = 0;
  private readonly pipes = new Set<Pipe>();
  private readonly sockets = new Set<Socket>();

  private constructor(
    readonly name: string,
    readonly port: number,
    private readonly server: Server,
  ) {}

  /** Listens on 127.0.0.1:`port` and forwards every connection to 127.0.0.1:`targetPort`. */
  static async start(name: string, port: number, targetPort: number): Promise<LinkProxy> {
    const server = createServer();
    const proxy = new LinkProxy(name, port, server);
    server.on("connection", (inbound) => proxy.accept(inbound, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    return proxy;
  }

  private accept(inbound: Socket, targetPort: number): void {
    const outbound = connect({ host: "127.0.0.1", port: targetPort });
    for (const socket of [inbound, outbound]) {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    }
    const forward = new Pipe(inbound, outbound, () => ({ blocked: this.blockedForward, delayMs: this.delayMs }));
    const backward = new Pipe(outbound, inbound, () => ({ blocked: this.blockedBackward, delayMs: this.delayMs }));
    this.pipes.add(forward).add(backward);
    let open = 2;
    const closed = () => {
      if (--open > 0) return;
      this.pipes.delete(forward);
      this.pipes.delete(backward);
    };
    inbound.on("close", closed);
    outbound.on("close", closed);
  }

  /** Sets which directions drop traffic (false, false heals the link). */
  setBlocked(forward: boolean, backward: boolean): void {
    if (forward === this.blockedForward && backward === this.blockedBackward) return;
    this.blockedForward = forward;
    this.blockedBackward = backward;
    for (const pipe of this.pipes) pipe.pump();
  }

  setDelay(ms: number): void {
    this.delayMs = ms;
    for (const pipe of this.pipes) pipe.pump();
  }

  async close(): Promise<void> {
    for (const pipe of this.pipes) pipe.stop();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
