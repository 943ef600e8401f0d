/**
 * The audit log file (audit.enable): one line per audit event the replica decides (src/replica/
 * audit.ts), in ZooKeeper's layout — its default appender's `%d{ISO8601} %p %c{2}: %m%n`, with the
 * time in UTC ISO 8601 and `corral.audit` for the logger — and ZooKeeper's message: the fields as
 * key=value pairs separated by tabs, in its order (session, user, ip, operation, znode, znode_type,
 * acl), then result. Failures are at level ERROR, everything else INFO, as ZooKeeper's
 * Slf4jAuditLogger logs them.
 *
 * Appended off the event loop: events are queued and written in batches, one write in flight at a
 * time. The queue is bounded in bytes: when the disk falls behind and the queue is full, further
 * events are dropped and counted, never held, so a slow disk costs audit lines, not the server's
 * memory or its clients' latency. The next batch written starts with a WARN line saying how many
 * were lost, and each loss is logged and counted (corral_audit_events_dropped_count).
 *
 * Unlike ZooKeeper, a value's control characters are written escaped (\t, \n, \uXXXX): a client's
 * digest user name may hold any character, and must not be able to forge a field or a line.
 */
import { closeSync, fsyncSync, openSync, write } from "node:fs";
import type { AuditEvent, AuditPort } from "../replica/audit.js";
import { ConfigError } from "./config-error.js";
import type { Logger } from "./log.js";

/** Bytes of audit lines queued while a write is in flight; beyond it events are dropped. */
export const AUDIT_QUEUED_BYTES_MAX = 16 * 1024 * 1024;

/** Writes `bytes` at the end of the file; `done` once written (or failed). */
export type AppendBytes = (bytes: Uint8Array, done: (error?: Error) => void) => void;

export interface AuditLogOptions {
  systemUser: string;
  logger: Logger;
  /** Told how many events were dropped, each time some are. */
  onDropped?: (count: number) => void;
  queuedBytesMax?: number;
  /** The wall clock for line times (tests fix it). */
  now?: () => Date;
}

export class AuditLog implements AuditPort {
  private queue: string[] = [];
  private queuedBytes = 0;
  private writing = false;
  /** Events dropped since the last line that told of a drop. */
  private dropped = 0;
  private closed = false;
  private writeFailureLogged = false;
  private idle: (() => void) | undefined;
  readonly systemUser: string;
  private readonly queuedBytesMax: number;
  private readonly now: () => Date;

  constructor(
    private readonly append: AppendBytes,
    private readonly options: AuditLogOptions,
  ) {
    this.systemUser = options.systemUser;
    this.queuedBytesMax = options.queuedBytesMax ?? AUDIT_QUEUED_BYTES_MAX;
    this.now = options.now ?? (() => new Date());
  }

  record(event: AuditEvent): void {
    if (this.closed) return;
    const line = auditLine(this.now(), event);
    const bytes = Buffer.byteLength(line, "utf8");
    if (this.queuedBytes + bytes > this.queuedBytesMax) {
      this.dropped += 1;
      // A line larger than the whole queue is dropped with nothing in flight: the drop is told now.
      if (!this.writing) this.writeQueued();
      return;
    }
    this.queue.push(line);
    this.queuedBytes += bytes;
    if (!this.writing) this.writeQueued();
  }

  /** Lines queued and not yet handed to the disk (tests look at the bound through it). */
  get queuedLineCount(): number {
    return this.queue.length;
  }

  /** Waits for the write in flight, writes what is queued synchronously, and closes. Nothing is recorded after. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.writing) await new Promise<void>((resolve) => (this.idle = resolve));
    const rest = this.takeBatch();
    if (rest !== undefined) await new Promise<void>((resolve) => this.append(rest, () => resolve()));
  }

  private writeQueued(): void {
    const batch = this.takeBatch();
    if (batch === undefined) {
      const idle = this.idle;
      this.idle = undefined;
      idle?.();
      return;
    }
    this.writing = true;
    this.append(batch, (error) => {
      this.writing = false;
      if (error) this.writeFailed(error);
      else this.writeFailureLogged = false;
      if (this.closed) {
        const idle = this.idle;
        this.idle = undefined;
        idle?.();
        return;
      }
      this.writeQueued();
    });
  }

  /** What is queued, as one write, led by a line telling of any drop; undefined when nothing is. */
  private takeBatch(): Uint8Array | undefined {
    if (this.queue.length === 0 && this.dropped === 0) return undefined;
    let text = this.queue.join("");
    this.queue = [];
    this.queuedBytes = 0;
    if (this.dropped > 0) {
      const count = this.dropped;
      this.dropped = 0;
      this.options.logger.warn({ droppedAuditEvents: count }, "the audit log fell behind: audit events were dropped");
      this.options.onDropped?.(count);
      text = `${timestamp(this.now())} WARN corral.audit: ${count} audit events dropped: the audit log could not keep up\n${text}`;
    }
    return Buffer.from(text, "utf8");
  }

  private writeFailed(error: Error): void {
    // Logged once per run of failures: a full disk must not flood the main log.
    if (this.writeFailureLogged) return;
    this.writeFailureLogged = true;
    this.options.logger.error({ err: error }, "writing the audit log failed: its lines are lost until a write succeeds");
  }
}

/** An open audit log file: its AuditLog, and how to close it once the last event is recorded. */
export interface AuditLogFile {
  log: AuditLog;
  /** Writes what is queued, syncs and closes the file. */
  close(): Promise<void>;
}

/**
 * Opens `path` for appending (created 0600: who did what is for operators); ConfigError
 * auditLogFile when it cannot be.
 */
export function openAuditLogFile(path: string, options: AuditLogOptions): AuditLogFile {
  let fd: number;
  try {
    fd = openSync(path, "a", 0o600);
  } catch (error) {
    throw new ConfigError("auditLogFile", `cannot open ${path} for appending: ${(error as Error).message}`);
  }
  const log = new AuditLog((bytes, done) => appendAll(fd, bytes, done), options);
  return {
    log,
    close: async () => {
      await log.close();
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** Writes all of `bytes` (a write may take only part of them). */
function appendAll(fd: number, bytes: Uint8Array, done: (error?: Error) => void): void {
  write(fd, bytes, 0, bytes.byteLength, null, (error, written) => {
    if (error) return done(error);
    if (written < bytes.byteLength) return appendAll(fd, bytes.subarray(written), done);
    done();
  });
}

/** One line of the audit log, with its newline. */
export function auditLine(time: Date, event: AuditEvent): string {
  return `${timestamp(time)} ${event.result === "failure" ? "ERROR" : "INFO"} corral.audit: ${auditMessage(event)}\n`;
}

/** ZooKeeper's AuditEvent.toString: the fields present, key=value, tab-separated, result last. */
export function auditMessage(event: AuditEvent): string {
  const fields: [string, string | undefined][] = [
    ["session", event.session],
    ["user", event.user],
    ["ip", event.ip],
    ["operation", event.operation],
    ["znode", event.znode],
    ["znode_type", event.znodeType],
    ["acl", event.acl],
    ["result", event.result],
  ];
  return fields
    .filter((field): field is [string, string] => field[1] !== undefined)
    .map(([key, value]) => `${key}=${escapeControl(value)}`)
    .join("\t");
}

function timestamp(time: Date): string {
  return time.toISOString();
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
const CONTROL = /[\u0000-\u001f\u007f]/g;

function escapeControl(value: string): string {
  return value.replace(CONTROL, (c) => (c === "\t" ? "\\t" : c === "\n" ? "\\n" : c === "\r" ? "\\r" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
}
