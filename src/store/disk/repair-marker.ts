/**
 * The mark a member leaves in its data dir while it repairs damaged files from its leader: from
 * the moment damage is found until a full snapshot from the leader is durable in their place. A
 * member that starts with the mark present (it crashed or was stopped mid-repair) repairs again:
 * whatever it holds meanwhile was never checked against the damage it replaces.
 *
 * `<dataDir>/REPAIRING`, JSON: { file, reason, since } — what was found damaged, and when.
 */
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";

import { fsyncDirectory } from "./snapshot-store.js";

export const REPAIR_MARKER_FILE = "REPAIRING";

export interface RepairMarker {
  /** What was found damaged: the file, or the LevelDB directory when LevelDB does not say which. */
  file: string;
  reason: string;
  /** ISO time the damage was found. */
  since: string;
}

/** The mark, or undefined when the member is not repairing. An unreadable mark is a mark all the same. */
export async function readRepairMarker(dataDir: string): Promise<RepairMarker | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, REPAIR_MARKER_FILE), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<RepairMarker>;
    if (typeof parsed.file === "string" && typeof parsed.reason === "string" && typeof parsed.since === "string") {
      return { file: parsed.file, reason: parsed.reason, since: parsed.since };
    }
  } catch {
    // Fall through: the mark itself was damaged; its presence is what counts.
  }
  return { file: join(dataDir, REPAIR_MARKER_FILE), reason: "an earlier repair did not finish (its mark does not say why)", since: "unknown" };
}

/**
 * Durably leaves the mark (temp file, fsync, rename, directory fsync). Synchronous: it is also
 * left from a failing log's last callback, on the way to the process's exit.
 */
export function writeRepairMarker(dataDir: string, damage: { file: string; reason: string }, now: Date): RepairMarker {
  const marker: RepairMarker = { file: damage.file, reason: damage.reason, since: now.toISOString() };
  const temp = join(dataDir, `${REPAIR_MARKER_FILE}.tmp`);
  const fd = openSync(temp, "w");
  try {
    writeSync(fd, `${JSON.stringify(marker)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, join(dataDir, REPAIR_MARKER_FILE));
  const dir = openSync(dataDir, "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  return marker;
}

/** Durably removes the mark: the member's files are a good copy again. */
export async function clearRepairMarker(dataDir: string): Promise<void> {
  await rm(join(dataDir, REPAIR_MARKER_FILE), { force: true });
  await fsyncDirectory(dataDir);
}
