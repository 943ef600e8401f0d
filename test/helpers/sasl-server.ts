/** A corral server process whose ZooKeeper port logs in with the JAAS text `jaas` (written to `dir`/`name`.jaas). */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, ServerProcess } from "./server-process.js";

export async function startSaslServer(
  dir: string,
  name: string,
  jaas: string,
  options: { env?: Record<string, string>; extraArgs?: string[] } = {},
): Promise<ServerProcess> {
  const jaasFile = join(dir, `${name}.jaas`);
  await writeFile(jaasFile, jaas);
  return ServerProcess.start({
    dataDir: join(dir, `${name}-data`),
    zkPort: await freePort(),
    ...(options.env === undefined ? {} : { env: options.env }),
    extraArgs: ["--jaas-config-file", jaasFile, ...(options.extraArgs ?? [])],
  });
}
