/**
 * deploy/k8s/corral.yaml as tests read it: the StatefulSet's pod, the start script its container
 * runs (a ConfigMap key mounted at the script's directory), the literal environment, and the
 * `kubectl exec ... corral shell` sessions its header documents for growing and shrinking.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { posix } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const K8S_FILE = fileURLToPath(new URL("../../../deploy/k8s/corral.yaml", import.meta.url));

type Json = Record<string, unknown>;

export interface K8sEnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}

export interface K8sManifest {
  /** The leading comment lines, without their "# ". */
  header: string;
  docs: Json[];
  /** The StatefulSet's name, its headless service, replicas and volume claim template. */
  name: string;
  serviceName: string;
  replicas: number;
  claimName: string;
  pod: { volumes?: { name: string; configMap?: { name: string } }[] };
  container: { command: string[]; env: K8sEnvVar[]; volumeMounts: { name: string; mountPath: string }[] };
}

export function loadK8s(): K8sManifest {
  const text = readFileSync(K8S_FILE, "utf8");
  const docs = parseAllDocuments(text).map((d) => d.toJS() as Json);
  const sts = docs.find((d) => d["kind"] === "StatefulSet") as {
    metadata: { name: string };
    spec: {
      serviceName: string;
      replicas: number;
      template: { spec: K8sManifest["pod"] & { containers: K8sManifest["container"][] } };
      volumeClaimTemplates: { metadata: { name: string } }[];
    };
  };
  return {
    header: text
      .split("\n")
      .filter((l) => l.startsWith("#"))
      .map((l) => l.replace(/^# ?/, ""))
      .join("\n"),
    docs,
    name: sts.metadata.name,
    serviceName: sts.spec.serviceName,
    replicas: sts.spec.replicas,
    claimName: sts.spec.volumeClaimTemplates[0]!.metadata.name,
    pod: sts.spec.template.spec,
    container: sts.spec.template.spec.containers[0]!,
  };
}

/** The start script the container runs: `sh <file>`, the file a key of a ConfigMap mounted at its directory. */
export function startScript(k8s: K8sManifest): string {
  const { command, volumeMounts } = k8s.container;
  assert.equal(command.length, 2, `the container runs sh <start script>: ${command.join(" ")}`);
  const [shell, file] = command as [string, string];
  assert.equal(shell, "sh");
  const mount = volumeMounts.find((m) => m.mountPath === posix.dirname(file));
  assert.ok(mount, `${posix.dirname(file)} is a mounted volume`);
  const configMapName = k8s.pod.volumes?.find((v) => v.name === mount.name)?.configMap?.name;
  assert.ok(configMapName, `volume ${mount.name} is a ConfigMap`);
  const configMap = k8s.docs.find((d) => d["kind"] === "ConfigMap" && (d["metadata"] as { name: string }).name === configMapName);
  assert.ok(configMap, `ConfigMap ${configMapName} is in the manifest`);
  const script = (configMap["data"] as Record<string, string> | undefined)?.[posix.basename(file)];
  assert.ok(script, `ConfigMap ${configMapName} holds ${posix.basename(file)}`);
  return script;
}

/** A container's env entries with a literal value (those from a Secret are the cluster's to give). */
export function plainEnv(env: readonly K8sEnvVar[]): NodeJS.ProcessEnv {
  const plain: NodeJS.ProcessEnv = {};
  for (const { name, value } of env) if (value !== undefined) plain[name] = value;
  return plain;
}

export interface ShellSession {
  /** The pod it runs in, and the --connect address there. */
  pod: string;
  connect: string;
  /** The lines fed to the shell (the here-document), each trimmed, in order. */
  script: string;
}

/** The header's `kubectl exec -i POD -- corral shell --connect ADDR <<EOF ... EOF` sessions, in order. */
export function shellSessions(header: string): ShellSession[] {
  return [...header.matchAll(/kubectl exec -i (\S+) -- corral shell --connect (\S+) <<EOF\n((?:.*\n)*?)\s*EOF\n/g)].map(([, pod, connect, body]) => ({
    pod: pod!,
    connect: connect!,
    script: body!
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "")
      .join("\n"),
  }));
}
