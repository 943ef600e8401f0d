/**
 * A steady write load through the SDK: one sequential node after another under `root`, each
 * remembered once acknowledged. A write whose answer was lost with its connection is neither
 * acknowledged nor failed (it may or may not have happened); any other error is a failure.
 */
import { Client, ZkError } from "../../src/index.js";

export class WriteLoad {
  readonly acked: string[] = [];
  readonly failed: string[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(
    private readonly client: Client,
    private readonly root: string,
  ) {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        this.acked.push(await this.client.create(`${this.root}/w-`, "x", { mode: "persistent-sequential" }));
      } catch (error) {
        if (!(error instanceof ZkError && error.code === "CONNECTIONLOSS")) this.failed.push(String(error));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
