// Drives Debian's Chromium (headless, through playwright-core) through the Spindle
// ResourceManager's web UI and asserts on the rendered DOM; takes desktop and phone
// screenshots of each page.
//
//   node ui-check.mjs <rm-web-url> <output-dir> <expectations.json>
//
// expectations.json: {
//   "running": "<app id of a RUNNING app with containers>", "runningName": "...",
//   "finished": "<app id of a FINISHED app>", "finishedName": "...",
//   "script": "<app id of the app named <script>alert(1)</script>>", "scriptName": "...",
//   "user": "<the apps' user>", "nodeId": "<host:port>", "nodeHttp": "<host:port>",
//   "memoryMb": 4096, "vcores": 4, "queue": "root.default"
// }
// Prints one line per check; exits 1 naming every failed check, 2 on a setup error.

import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const [base, outDir, expectFile] = process.argv.slice(2);
if (!base || !outDir || !expectFile) {
  console.error('usage: node ui-check.mjs <rm-web-url> <output-dir> <expectations.json>');
  process.exit(2);
}
const want = JSON.parse(readFileSync(expectFile, 'utf8'));
mkdirSync(outDir, { recursive: true });
const url = (p) => new URL(p, base).toString();

const failures = [];
let checks = 0;
function check(ok, what, detail = '') {
  checks++;
  if (ok) {
    console.log(`ok   ${what}`);
  } else {
    console.log(`FAIL ${what}${detail ? `: ${detail}` : ''}`);
    failures.push(what + (detail ? `: ${detail}` : ''));
  }
}
function eq(actual, expected, what) {
  check(actual === expected, what, `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

const executablePath = process.env.SPINDLE_CHROMIUM || '/usr/bin/chromium';
const browser = await chromium.launch({
  executablePath,
  headless: true,
  // Playwright gives every launch a fresh, empty profile (--user-data-dir).
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});

const dialogs = [];
async function newPage(options) {
  const context = await browser.newContext(options);
  // A missing element fails its check soon instead of stalling the run.
  context.setDefaultTimeout(5000);
  const page = await context.newPage();
  page.on('dialog', async (d) => {
    dialogs.push(`${d.type()}: ${d.message()}`);
    await d.dismiss().catch(() => {});
  });
  page.on('pageerror', (e) => failures.push(`script error on ${page.url()}: ${e.message}`));
  return page;
}
const desktop = { viewport: { width: 1280, height: 800 } };
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

async function open(page, p, status = 200) {
  const res = await page.goto(url(p), { waitUntil: 'load' });
  eq(res ? res.status() : 0, status, `GET ${p} answers ${status}`);
  return res;
}
async function shot(page, name) {
  await page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });
}
const text = async (page, sel) => ((await page.locator(sel).first().textContent()) ?? '').trim();
const rowIds = (page) =>
  page.$$eval('#apps tbody tr', (rows) => rows.filter((r) => !r.hidden).map((r) => r.dataset.id));
const noSideScroll = (page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);

try {
  const page = await newPage(desktop);

  // --- overview -------------------------------------------------------------------
  await open(page, '/cluster?refresh=0');
  eq(await text(page, '#active-nodes'), '1', 'overview: 1 active node');
  eq(await text(page, '#memory-total'), String(want.memoryMb), 'overview: memory total');
  eq(await text(page, '#vcores-total'), String(want.vcores), 'overview: vcores total');
  eq(await text(page, '#apps-RUNNING'), '1', 'overview: 1 running app');
  check(Number(await text(page, '#apps-FINISHED')) >= 2, 'overview: 2 finished apps');
  check(Number(await text(page, '#memory-used')) > 0, 'overview: memory in use');
  eq(await text(page, '#rm-state'), 'active', 'overview: RM is active');
  await shot(page, 'overview-desktop');
  await open(page, '/?refresh=0');
  check((await page.title()).includes('Cluster overview'), 'overview also at /');

  // --- applications ---------------------------------------------------------------
  await open(page, '/cluster/apps?refresh=0');
  const row = (id) => page.locator(`#apps tbody tr[data-id="${id}"]`);
  eq(await row(want.running).locator('.app-name').textContent(), want.runningName, 'apps: running app name');
  eq(await row(want.running).getAttribute('data-state'), 'RUNNING', 'apps: running app state');
  const tracking = await row(want.running).locator('a.tracking').getAttribute('href');
  check(
    typeof tracking === 'string' && tracking.endsWith(`/proxy/${want.running}/`),
    'apps: tracking UI links to the proxy', `href ${tracking}`,
  );
  eq(await row(want.finished).getAttribute('data-state'), 'FINISHED', 'apps: finished app state');
  eq(await row(want.script).locator('.app-name').textContent(), want.scriptName, 'apps: <script> name shown as text');
  const injected = await page.$$eval('script', (s) => s.filter((e) => e.textContent.includes('alert(1)')).length);
  eq(injected, 0, 'apps: the <script> name is not a script element');

  const before = await rowIds(page);
  await page.click('#apps th[data-key="name"] a');
  const byName = await rowIds(page);
  const names = await page.$$eval('#apps tbody tr .app-name', (c) => c.map((e) => e.textContent.toLowerCase()));
  check(JSON.stringify(byName) !== JSON.stringify(before), 'apps: clicking Name changes the order', `${before} -> ${byName}`);
  check(JSON.stringify(names) === JSON.stringify([...names].sort()), 'apps: rows sorted by name ascending', names.join(' | '));
  check(page.url().includes('sort=name'), 'apps: the address follows the sort', page.url());
  await page.click('#apps th[data-key="name"] a');
  eq(JSON.stringify(await rowIds(page)), JSON.stringify([...byName].reverse()), 'apps: clicking again reverses');

  await page.fill('#app-filter', want.finishedName);
  eq(JSON.stringify(await rowIds(page)), JSON.stringify([want.finished]), 'apps: filter box hides non-matching rows');
  eq(await text(page, '#app-count'), '1', 'apps: count follows the filter');
  await page.fill('#app-filter', '');
  await page.selectOption('#app-state', 'RUNNING');
  eq(JSON.stringify(await rowIds(page)), JSON.stringify([want.running]), 'apps: state selector keeps RUNNING rows');
  await page.selectOption('#app-state', 'ALL');
  await shot(page, 'apps-desktop');

  // Without script, the server sorts and filters.
  const plain = await newPage({ ...desktop, javaScriptEnabled: false });
  await open(plain, '/cluster/apps?sort=name&order=asc&refresh=0');
  const serverNames = await plain.$$eval('#apps tbody tr .app-name', (c) => c.map((e) => e.textContent.toLowerCase()));
  check(serverNames.length >= 3 && JSON.stringify(serverNames) === JSON.stringify([...serverNames].sort()),
    'apps without script: sorted by the server', serverNames.join(' | '));
  await open(plain, `/cluster/apps?q=${encodeURIComponent(want.runningName)}&refresh=0`);
  eq(JSON.stringify(await rowIds(plain)), JSON.stringify([want.running]), 'apps without script: filtered by the server');
  await open(plain, '/cluster/apps/FINISHED?refresh=0');
  const states = await plain.$$eval('#apps tbody tr', (r) => r.map((e) => e.dataset.state));
  check(states.length >= 2 && states.every((s) => s === 'FINISHED'), '/cluster/apps/FINISHED lists finished apps only', states.join(','));
  await open(plain, '/cluster/apps/NOSUCHSTATE', 400);
  await open(plain, `/cluster/apps?q=${encodeURIComponent('"><script>alert(2)</script>')}&refresh=0`);
  eq(await plain.inputValue('#app-filter'), '"><script>alert(2)</script>', 'apps: a hostile filter stays a value');

  // --- one application ------------------------------------------------------------
  await open(page, `/cluster/app/${want.running}?refresh=0`);
  eq(await text(page, '#app-name'), want.runningName, 'app: name');
  const attempts = await page.$$eval('#attempts tbody tr td:first-child', (c) => c.map((e) => e.textContent.trim()));
  check(attempts.length === 1 && /^appattempt_\d+_\d+_000001$/.test(attempts[0]), 'app: shows its attempt', attempts.join(','));
  const logs = await page.locator('#attempts a.logs').first().getAttribute('href');
  const logsRe = new RegExp(`^http://${want.nodeHttp.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/node/containerlogs/container_[0-9_e]+/${want.user}$`);
  check(logsRe.test(logs ?? ''), 'app: AM container logs link to the NodeManager', logs);
  check((await page.locator('#containers tbody tr').count()) >= 2, 'app: lists the attempt\'s containers (AM and one more)');
  check((await text(page, '#timeline')).includes('Submitted'), 'app: timeline shows submission');
  await shot(page, 'app-desktop');
  await page.click('#attempts tbody tr td:first-child a');
  await page.waitForLoadState('load');
  check((await page.title()).startsWith('Application attempt'), 'attempt page opens from the app page', await page.title());

  await open(page, `/cluster/app/${want.script}?refresh=0`);
  eq(await text(page, '#app-name'), want.scriptName, 'app: <script> name shown as text');
  await open(page, '/cluster/app/not-an-app-id', 400);
  await open(page, `/cluster/app/${want.running.replace(/_\d+$/, '_9999')}`, 404);

  // --- nodes ----------------------------------------------------------------------
  await open(page, '/cluster/nodes?refresh=0');
  const nodeRows = await page.$$eval('#nodes tbody tr', (r) => r.map((e) => e.cells[0].textContent.trim()));
  eq(JSON.stringify(nodeRows), JSON.stringify([want.nodeId]), 'nodes: lists the node');
  eq(await page.locator('#nodes tbody tr a').first().getAttribute('href'), `http://${want.nodeHttp}/`, 'nodes: HTTP address link');
  await shot(page, 'nodes-desktop');

  // --- scheduler ------------------------------------------------------------------
  await open(page, '/cluster/scheduler?refresh=0');
  check(await page.locator('.queue[data-queue="root"]').count() === 1, 'scheduler: root queue');
  const leaf = page.locator(`.queue[data-queue="${want.queue}"]`);
  check(await leaf.count() === 1, `scheduler: ${want.queue} under root`);
  check(await page.locator(`#queues > li > ul .queue[data-queue="${want.queue}"]`).count() === 1, 'scheduler: the leaf is nested in the tree');
  check(((await leaf.locator('.queue-users').textContent()) ?? '').includes(`${want.user} (1 apps, 1 running)`), 'scheduler: the leaf lists its user');
  check(await leaf.locator('.bar').count() >= 2, 'scheduler: usage bars against guaranteed and maximum');
  await shot(page, 'scheduler-desktop');

  await open(page, '/cluster/cluster?refresh=0');
  check((await text(page, '#about')).includes('ResourceManager version'), 'about page');

  // --- pages reload themselves --------------------------------------------------------
  await open(page, '/cluster?refresh=1');
  const reloaded = await page.waitForEvent('load', { timeout: 20000 }).then(() => true, () => false);
  check(reloaded, 'pages reload themselves (?refresh=1)');
  await open(page, '/cluster?refresh=0');
  check(!(await page.content()).includes('location.replace'), '?refresh=0 turns reloading off');

  const css = await page.request.get(url('/static/spindle.css'));
  check(css.ok() && (css.headers()['cache-control'] ?? '').includes('max-age'), 'stylesheet served with a cache header');

  // --- phone ----------------------------------------------------------------------
  const mobile = await newPage(phone);
  for (const [p, name] of [
    ['/cluster?refresh=0', 'overview-phone'],
    ['/cluster/apps?refresh=0', 'apps-phone'],
    [`/cluster/app/${want.running}?refresh=0`, 'app-phone'],
    ['/cluster/scheduler?refresh=0', 'scheduler-phone'],
  ]) {
    await open(mobile, p);
    check(await noSideScroll(mobile), `phone: ${p} fits the screen width`);
    await shot(mobile, name);
  }
  // The README's picture: the overview, desktop, first screen only.
  await open(page, '/cluster?refresh=0');
  await page.setViewportSize({ width: 1280, height: 440 });
  await page.screenshot({ path: path.join(outDir, 'ui-overview.png') });
} catch (e) {
  failures.push(`error: ${e.stack || e}`);
  console.log(`FAIL ${e.stack || e}`);
} finally {
  await browser.close().catch(() => {});
}

check(dialogs.length === 0, 'no dialog fired', dialogs.join('; '));
console.log(`${checks} checks, ${failures.length} failed; screenshots in ${outDir}`);
if (failures.length) {
  console.error(`UI check failed:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
