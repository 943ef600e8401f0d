/** corral through its public SDK only (docs/architecture.md §6): what a user of the package would write. */
import { Client } from "../../src/index.js";
import type { BenchConnection, BenchConnectOptions, BenchTarget } from "../target.js";

function hasCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

class CorralConnection implements BenchConnection {
  constructor(private readonly client: Client) {}

  async createSequential(prefix: string, value: Uint8Array): Promise<string> {
    return await this.client.create(prefix, value, { mode: "persistent-sequential" });
  }

  async setData(path: string, value: Uint8Array): Promise<void> {
    await this.client.setData(path, value);
  }

  async getData(path: string): Promise<Uint8Array> {
    return (await this.client.getData(path)).data;
  }

  async create(path: string, value: Uint8Array): Promise<boolean> {
    try {
      await this.client.create(path, value, { mode: "persistent" });
      return true;
    } catch (error) {
      if (hasCode(error, "NODEEXISTS")) return false;
      throw error;
    }
  }

  async children(path: string): Promise<string[]> {
    try {
      return await this.client.getChildren(path);
    } catch (error) {
      if (hasCode(error, "NONODE")) return [];
      throw error;
    }
  }

  async delete(path: string): Promise<boolean> {
    try {
      await this.client.delete(path);
      return true;
    } catch (error) {
      if (hasCode(error, "NONODE")) return false;
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

export const corralTarget: BenchTarget = {
  name: "corral",
  async connect(host: string, options: BenchConnectOptions): Promise<BenchConnection> {
    const client = await Client.connect(host, { sessionTimeoutMs: options.sessionTimeoutMs, ...(options.tls === undefined ? {} : { tls: options.tls }) });
    return new CorralConnection(client);
  },
};
