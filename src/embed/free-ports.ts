/**
 * Ports for servers that must know each other's addresses before any of them binds: a cluster's
 * members list every member's ports in one configuration, so the ports are chosen first.
 */
import { createServer } from "node:net";

/**
 * Chosen below the kernel's ephemeral range (32768-60999 by default): a port that listen(0) hands
 * out comes from that range, and between the probe and the server's bind an outgoing connection of
 * any process may take it as its source port.
 */
export const PICKED_PORT_MIN = 20_000;
export const PICKED_PORT_MAX = 32_700;

/** Whether `port` can be bound on 127.0.0.1 right now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * Ports this process has handed out: nothing binds a port between freePort and the server's start,
 * so without this two calls (the ports of one cluster's members, say) could get the same one.
 */
const handedOut = new Set<number>();

/** A port, free right now on 127.0.0.1, outside the ephemeral range, never handed out before by this process. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = PICKED_PORT_MIN + Math.floor(Math.random() * (PICKED_PORT_MAX - PICKED_PORT_MIN));
    if (handedOut.has(port)) continue;
    if (await portIsFree(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error("no free port found");
}
