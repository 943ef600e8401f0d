/** Four-letter words over a bare socket, for ZooKeeper and corral's ZooKeeper port alike. */
import { connect } from "node:net";

/** Sends one four-letter word to 127.0.0.1:port and resolves with the whole answer ("" if refused). */
export function fourLetterWord(port: number, word: string, limitMs = 5_000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let answer = "";
    const timer = setTimeout(() => socket.destroy(), limitMs);
    socket.setEncoding("utf8");
    socket.once("connect", () => socket.write(word));
    socket.on("data", (chunk: string) => (answer += chunk));
    socket.once("error", () => undefined);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}
