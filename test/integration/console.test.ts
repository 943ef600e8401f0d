/**
 * The web console in a real headless browser (Debian's chromium driven by playwright-core; no
 * browser is downloaded) against real server processes on 127.0.0.1: browsing, create, edit with
 * a version conflict, delete and deleteall, a change made by another client arriving through a
 * watch, ZooKeeper's typed errors for bad input, the leader change after the leader is killed, and
 * the console refused without the super user's credentials when the server requires auth.
 *
 * Screenshots go to test-artifacts/console/ (git-ignored; CI keeps them as artefacts).
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { Client, generateDigest, Lock } from "../../src/index.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = join(process.cwd(), "test-artifacts", "console");

function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Waits until the page's element `selector` has text for which `accept` holds; returns it. */
function textOf(page: Page, selector: string, accept: (text: string) => boolean, what: string): Promise<string> {
  return waitFor(what, async () => {
    const text =
      (await page
        .locator(selector)
        .first()
        .textContent({ timeout: 1_000 })
        .catch(() => null)) ?? "";
    return accept(text) ? text : undefined;
  });
}

/** The error banner's ZooKeeper code, once it shows one. */
function errorCode(page: Page, code: string): Promise<string> {
  return waitFor(`error ${code} on the page`, async () => ((await page.locator("#error").getAttribute("data-code")) === code ? code : undefined));
}

async function selectNode(page: Page, path: string): Promise<void> {
  await page.locator(`.row[data-path="${path}"]`).click();
  await textOf(page, "#node-path", (t) => t === path, `${path} selected`);
}

describe("web console", { skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM} (apt-get install chromium)` }, () => {
  let browser: Browser;
  let cluster: ClusterProcess;
  let other: Client;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    [browser, cluster] = await Promise.all([launchBrowser(), ClusterProcess.start({ voters: 3, httpPorts: true })]);
    other = await Client.connect(cluster.connectString, { sessionTimeoutMs: 10_000 });
  });

  after(async () => {
    await other?.close();
    await browser?.close();
    await cluster?.stop();
  });

  /** A page on member `id`'s console, with the tree loaded. */
  async function openConsole(id: number): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${cluster.server(id).adminUrl}/`);
    await page.locator('.row[data-path="/zookeeper"]').waitFor();
    await waitFor("live updates connected", async () => ((await page.locator("#live.on").count()) > 0 ? true : undefined));
    return page;
  }

  test("browses, creates, edits with a version conflict, and deletes with confirmation", async () => {
    const page = await openConsole(1);
    // Create /shop with JSON data: shown pretty-printed.
    await page.click("#btn-create");
    await page.fill("#create-path", "/shop");
    await page.fill("#create-data", '{"name":"corral","items":[1,2]}');
    await page.click("#create-submit");
    await textOf(page, "#node-data", (t) => t.includes('"name": "corral"'), "JSON pretty-printed");
    assert.equal(await page.locator('[data-stat="version"]').textContent(), "0");
    await page.locator('.row[data-path="/shop"]').waitFor();
    await shot(page, "01-created-json");

    // Edit from version 0 while another client writes version 1: BADVERSION, clearly.
    await page.click("#btn-edit");
    assert.equal(await page.inputValue("#edit-version"), "0");
    await other.setData("/shop", "theirs");
    await textOf(page, "#node-data", (t) => t === "theirs", "the other client's write shown");
    await page.fill("#edit-data", "mine");
    await page.click("#edit-submit");
    await errorCode(page, "BADVERSION");
    assert.match((await page.locator("#error").textContent()) ?? "", /changed since you loaded version 0/);
    await shot(page, "02-edit-conflict");
    // With the current version it saves.
    await page.click("#btn-edit");
    assert.equal(await page.inputValue("#edit-version"), "1");
    await page.fill("#edit-data", "mine");
    await page.click("#edit-submit");
    await textOf(page, "#node-data", (t) => t === "mine", "own edit saved");
    assert.equal(new TextDecoder().decode((await other.getData("/shop")).data), "mine");

    // Binary data shows as hex.
    await other.create("/shop/blob", new Uint8Array([0, 1, 2, 255]));
    await textOf(page, '.row[data-path="/shop"] .count', (t) => t === "(1)", "the new child counted");
    await page.locator('.row[data-path="/shop"] .toggle').click();
    await selectNode(page, "/shop/blob");
    await textOf(page, "#node-data", (t) => t.includes("00 01 02 ff"), "hex view");

    // Delete asks first; a node with children is NOTEMPTY; deleteall removes the subtree.
    await selectNode(page, "/shop");
    await page.click("#btn-delete");
    await page.click("#confirm-cancel");
    assert.notEqual(await other.exists("/shop"), null);
    await page.click("#btn-delete");
    await shot(page, "03-delete-confirm");
    await page.click("#confirm-ok");
    await errorCode(page, "NOTEMPTY");
    await page.click("#btn-deleteall");
    await page.click("#confirm-ok");
    await waitFor("/shop gone from the tree", async () => ((await page.locator('.row[data-path="/shop"]').count()) === 0 ? true : undefined));
    assert.equal(await other.exists("/shop"), null);
    await shot(page, "04-deleted");
    await page.close();
  });

  test("shows a change made by another client as it happens, through watches", async () => {
    const page = await openConsole(2);
    await other.create("/live", "before");
    await other.create("/live/first", "");
    await page.locator('.row[data-path="/live"]').waitFor();
    await selectNode(page, "/live");
    await textOf(page, '.row[data-path="/live"] .count', (t) => t === "(1)", "child counted");
    await page.locator('.row[data-path="/live"] .toggle').click();
    await page.locator('.row[data-path="/live/first"]').waitFor();
    await textOf(page, "#node-data", (t) => t === "before", "initial data");
    await other.setData("/live", "after");
    await textOf(page, "#node-data", (t) => t === "after", "watch-driven data update");
    await other.create("/live/child", "");
    await page.locator('.row[data-path="/live/child"]').waitFor();
    await shot(page, "05-watch-update");
    await page.close();
  });

  test("links each view to its documentation page, which the admin port serves from the package's docs", async () => {
    const page = await openConsole(1);
    const links = await page.locator("a#docs-link, a.help").evaluateAll((anchors: { href: string }[]) => anchors.map((a) => a.href));
    assert.ok(links.length >= 5, `the header and every view but the tree link their page: ${links.join(", ")}`);
    for (const href of links) {
      const answer = await fetch(href);
      assert.equal(answer.status, 200, href);
      assert.match(await answer.text(), /^# /m, `${href} is a docs page with a title`);
    }
    const admin = cluster.server(1).adminUrl;
    for (const escape of ["docs/../../package.json", "docs/%2e%2e/README.md", "docs/operations/console.txt", "docs/nosuchpage.md"]) {
      assert.equal((await fetch(`${admin}/console/${escape}`)).status, 404, escape);
    }
    await page.close();
  });

  test("shows who holds a recipe's lock", async () => {
    const lock = new Lock(other, "/locks/orders");
    await lock.acquire();
    const page = await openConsole(1);
    await page.click('.tab[data-tab="recipes"]');
    const row = await textOf(page, "#recipes", (t) => t.includes("/locks/orders"), "the lock listed");
    assert.match(row, new RegExp(`0x${other.sessionId.toString(16)}`));
    await shot(page, "06-recipes");
    await lock.release();
    await page.close();
  });

  test("answers bad input with ZooKeeper's typed errors on the page", async () => {
    const page = await openConsole(3);
    await other.create("/taken", "");
    const create = async (path: string, data = "", encoding = "text") => {
      await page.evaluate('delete document.getElementById("error").dataset.code');
      await page.click("#btn-create");
      await page.fill("#create-path", path);
      await page.fill("#create-data", data);
      await page.selectOption("#create-encoding", encoding);
      await page.click("#create-submit");
    };
    await create("no-slash");
    await errorCode(page, "BADARGUMENTS");
    await create("/a//b");
    await errorCode(page, "BADARGUMENTS");
    await create("/taken");
    await errorCode(page, "NODEEXISTS");
    await create("/missing/parent");
    await errorCode(page, "NONODE");
    await create("/hex", "zz", "hex");
    await errorCode(page, "BADARGUMENTS");
    await shot(page, "06-bad-input-errors");
    await selectNode(page, "/zookeeper");
    await page.click("#btn-edit");
    await page.evaluate('delete document.getElementById("error").dataset.code');
    await page.fill("#edit-version", "not-a-number");
    await page.click("#edit-submit");
    await errorCode(page, "BADARGUMENTS");
    // The server is still serving everyone.
    assert.equal(typeof (await other.create("/after-bad-input", "")), "string");
    await page.close();
  });

  test("shows the new leader after the leader is killed", async () => {
    const leader = await waitFor("an agreed leader", () => cluster.agreedLeader());
    const watcher = [...cluster.servers.keys()].find((id) => id !== leader)!;
    const page = await openConsole(watcher);
    await page.click('.tab[data-tab="cluster"]');
    await waitFor("leader shown", async () => ((await page.locator("#cluster-leader").getAttribute("data-leader")) === String(leader) ? true : undefined));
    await page.locator("#learners tr:nth-child(3)").waitFor();
    await shot(page, "07-cluster-before");
    await page.click('.tab[data-tab="sessions"]');
    await page.locator("#sessions tr[data-session]").first().waitFor();
    await shot(page, "08-sessions");
    await page.click('.tab[data-tab="cluster"]');
    await cluster.server(leader).crash();
    const next = await waitFor(
      "a new leader shown",
      async () => {
        const shown = await page.locator("#cluster-leader").getAttribute("data-leader");
        return shown && shown !== String(leader) ? Number(shown) : undefined;
      },
      60_000,
    );
    assert.notEqual(next, leader);
    await textOf(page, `tr[data-member="${leader}"]`, (t) => t.includes("unreachable"), "the killed member shown unreachable");
    // The elections seen: the first (won by the killed leader) and the one that chose the new leader.
    await textOf(page, "#elections", (t) => t.includes("leading"), "the elections table filled");
    const electedLeaders = await page.locator("#elections tr[data-election] td:nth-child(4)").allTextContents();
    assert.ok(electedLeaders.includes(String(next)), `the election of ${next} is listed: ${electedLeaders.join(",")}`);
    assert.ok(electedLeaders.includes(String(leader)), `the first election, of ${leader}, is listed: ${electedLeaders.join(",")}`);
    await shot(page, "09-cluster-after-leader-killed");
    await page.click('.tab[data-tab="charts"]');
    await page.waitForTimeout(500);
    await shot(page, "10-charts");
    await page.close();
  });
});

describe("web console with auth required", { skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM}` }, () => {
  let browser: Browser;
  let server: ServerProcess;
  let dir: { path: string; remove: () => Promise<void> };

  before(async () => {
    dir = await makeTempDir("corral-console-auth-");
    [browser, server] = await Promise.all([
      launchBrowser(),
      ServerProcess.start({ dataDir: dir.path, adminPort: await freePort(), logLevel: "warn", extraArgs: ["--super-digest", generateDigest("super:s3cret")] }),
    ]);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await dir?.remove();
  });

  test("refuses the console without the super user's credentials", async () => {
    // Chromium answers a refused navigation with ERR_INVALID_AUTH_CREDENTIALS; the browser
    // context's own HTTP client shows the answer itself.
    const anonymous = await browser.newContext();
    for (const path of ["/console/", "/console/console.js", "/console/api/node?path=/", "/console/api/cluster"]) {
      const answer = await anonymous.request.get(`${server.adminUrl}${path}`);
      assert.equal(answer.status(), 401, path);
      assert.match(answer.headers()["www-authenticate"] ?? "", /^Basic /);
    }
    const page = await anonymous.newPage();
    await assert.rejects(page.goto(`${server.adminUrl}/console/`), /ERR_INVALID_AUTH_CREDENTIALS/);
    await anonymous.close();
    const basic = (userPassword: string) => ({ authorization: `Basic ${Buffer.from(userPassword).toString("base64")}` });
    const wrong = await browser.newContext({ extraHTTPHeaders: basic("super:wrong") });
    assert.equal((await wrong.request.get(`${server.adminUrl}/console/api/node?path=/`)).status(), 401);
    await wrong.close();
    // The /commands stay as ZooKeeper 3.8's AdminServer has them: open on the admin port.
    const commands = await browser.newContext();
    assert.equal((await commands.request.get(`${server.adminUrl}/commands/ruok`)).status(), 200);
    await commands.close();

    const superUser = await browser.newContext({ httpCredentials: { username: "super", password: "s3cret" } });
    const signedIn = await superUser.newPage();
    assert.equal((await signedIn.goto(`${server.adminUrl}/console/`))?.status(), 200);
    await signedIn.locator('.row[data-path="/zookeeper"]').waitFor();
    await shot(signedIn, "12-auth-signed-in");
    await superUser.close();
  });
});
