// Drives a real VS Code (code-server, in Debian's Chromium through playwright-core) with the
// extension installed from its .vsix, the way a person would: open the files, read the lenses,
// hover, open the diff, accept (confirming the question it asks), and read what the page shows.
// Workspace trust is on: the folder opens in Restricted Mode first (the extension waits, and no
// server runs), and is trusted from the extension's own status item.
// tests/editors/test_vscode_real.py starts code-server, runs this, and checks the bytes on disk.
//
//   node drive.mjs <config.json>   config: {url, workspace, questionsWorkspace, shots, results, draftEdit}
//
// Every step saves a screenshot under `shots`; `results` gets a JSON report of the steps, every
// notification seen, and the first failure (with its screenshot) if there was one.

import fs from 'node:fs';
import path from 'node:path';

import { chromium } from 'playwright-core';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf-8'));
const report = { steps: [], notifications: [], failure: null };
const STEP_TIMEOUT = 30_000;
let shotNumber = 0;
let page;

function save() {
  fs.writeFileSync(config.results, JSON.stringify(report, null, 2));
}

async function shot(name) {
  shotNumber += 1;
  const file = path.join(config.shots, `${String(shotNumber).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

async function step(name, fn) {
  const started = Date.now();
  try {
    const detail = await fn();
    const screenshot = await shot(name);
    report.steps.push({ name, ok: true, seconds: (Date.now() - started) / 1000, detail: detail ?? null, screenshot });
    save();
  } catch (error) {
    let screenshot = null;
    try {
      screenshot = await shot(`${name}-FAILED`);
    } catch {
      // the page is gone
    }
    report.failure = { step: name, error: String(error?.stack ?? error), screenshot };
    save();
    throw error;
  }
}

function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

/** Every toast on screen, with its severity, remembered for the final "no error" check. */
async function collectNotifications() {
  const toasts = await page.$$eval('.notifications-toasts .notification-list-item', (items) =>
    items.map((item) => ({
      text: item.querySelector('.notification-list-item-message')?.textContent ?? '',
      severity: item.querySelector('.notification-list-item-icon')?.className ?? '',
    })),
  );
  for (const toast of toasts) {
    if (!report.notifications.some((n) => n.text === toast.text)) {
      report.notifications.push(toast);
    }
  }
  return toasts;
}

async function statusText() {
  return page.locator('.statusbar-item', { hasText: /kitsoki-miner|proposals:/ }).first().innerText();
}

async function waitForStatus(pattern, what) {
  await page.waitForFunction(
    (source) => [...document.querySelectorAll('.statusbar-item')].some((e) => new RegExp(source).test(e.textContent ?? '')),
    pattern.source,
    { timeout: STEP_TIMEOUT },
  ).catch(async () => {
    throw new Error(`${what}: the status bar never showed ${pattern} (it shows "${await statusText().catch(() => '?')}")`);
  });
}

async function command(name) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${name}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor();
  await page.keyboard.press('Enter');
}

/** The kitsoki-miner servers running for this workspace (the extension starts them there). */
function serversFor(workspace) {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf-8').split('\0');
      const isServer = argv.some((a) => a.endsWith('/kitsoki-miner') || a === 'kitsoki-miner' || a === 'server.cli')
        && argv.includes('serve');
      if (isServer && fs.readlinkSync(`/proc/${pid}/cwd`) === workspace) {
        found.push({ pid: Number(pid), argv: argv.filter(Boolean) });
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** The startup question about trust, answered as a person would. */
async function answerTrust(button) {
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'Do you trust the authors' });
  await dialog.waitFor({ timeout: 90_000 });
  await dialog.locator('a.monaco-button', { hasText: button }).click();
  await dialog.waitFor({ state: 'detached' });
}

function exactly(text) {
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

/** Focus the file's tab if it is open, else open it with Quick Open (the row named exactly so). */
async function openFile(relative) {
  const base = path.basename(relative);
  const tab = page.locator('.tabs-container .tab', { has: page.locator('.label-name', { hasText: exactly(base) }) })
    .filter({ hasNotText: '↔' });
  if ((await tab.count()) > 0) {
    await tab.first().click();
  } else {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(relative);
    const row = page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: exactly(base) }) });
    await row.first().waitFor();
    await row.first().click();
  }
  await page.locator('.tab.active', { has: page.locator('.label-name', { hasText: exactly(base) }) })
    .waitFor({ timeout: STEP_TIMEOUT });
  await page.locator('.editor-instance .monaco-editor .margin-view-overlays').first().click({ position: { x: 5, y: 10 } });
}

async function goToLine(line) {
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`:${line}`);
  await page.keyboard.press('Enter');
}

async function lensTexts() {
  return page.$$eval('.monaco-editor .codelens-decoration a, .monaco-editor .codelens-decoration span',
    (els) => els.map((e) => e.textContent?.trim() ?? '').filter((t) => t && t !== '|'));
}

async function waitForLens(text) {
  await page.locator('.codelens-decoration a', { hasText: text }).first().waitFor({ timeout: STEP_TIMEOUT })
    .catch(async () => {
      throw new Error(`no code lens "${text}"; the lenses are ${JSON.stringify(await lensTexts())}`);
    });
}

async function clickLens(text) {
  await waitForLens(text);
  await page.locator('.codelens-decoration a', { hasText: text }).first().click();
}

async function pick(label) {
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: label }).first();
  await row.waitFor({ timeout: STEP_TIMEOUT });
  await row.click();
}

/** The modal an accept asks first: its text, then a click on Accept. */
async function confirmAccept(title) {
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: STEP_TIMEOUT });
  const message = await dialog.locator('.dialog-message-text').innerText();
  const detail = await dialog.locator('.dialog-message-detail').innerText().catch(() => '');
  check(message.includes(`Accept "${title}"?`), `the confirmation says "${message}"`);
  check(/flows? .*flows\/.*\.yaml/.test(detail) || /no flow exercises this change/.test(detail),
    `the confirmation does not name the flows it runs (or say that none does): "${detail}"`);
  await shot('confirm-accept');
  await dialog.locator('.dialog-buttons a.monaco-button', { hasText: 'Accept' }).click();
  await dialog.waitFor({ state: 'detached' });
  return { message, detail };
}

async function waitForToast(pattern, what) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const toasts = await collectNotifications();
    const found = toasts.find((t) => pattern.test(t.text));
    if (found) {
      return found;
    }
    await page.waitForTimeout(250);
  }
  throw new Error(`${what}: no notification matching ${pattern}; seen: ${JSON.stringify(report.notifications)}`);
}

async function closeToasts() {
  await command('Notifications: Clear All Notifications');
  await page.waitForTimeout(300);
}

async function main() {
  fs.mkdirSync(config.shots, { recursive: true });
  // A fresh, empty profile (Playwright passes it as --user-data-dir).
  const browser = await chromium.launchPersistentContext(config.browserProfile, {
    executablePath: config.chromium ?? '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 860 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(STEP_TIMEOUT);

    await step('restricted-mode-waits-for-trust', async () => {
      await page.goto(`${config.url}/?folder=${encodeURIComponent(config.workspace)}`);
      await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
      await answerTrust("No, I don't trust the authors");
      await waitForStatus(/kitsoki-miner: trust this folder to start/, 'in Restricted Mode the status item says it waits');
      const item = page.locator('.statusbar-item', { hasText: 'kitsoki-miner: trust this folder to start' });
      await item.hover();
      const hover = page.locator('.workbench-hover, .monaco-hover', { hasText: 'Restricted Mode' }).first();
      await hover.waitFor({ timeout: STEP_TIMEOUT });
      const tooltip = await hover.innerText();
      check(/does not start its server .*runs the project's flows on accept/.test(tooltip), `the tooltip says "${tooltip}"`);
      await page.waitForTimeout(500); // the extension has activated (its status shows): a server would be up by now
      const running = serversFor(config.workspace);
      check(running.length === 0, `a server runs in Restricted Mode: ${JSON.stringify(running)}`);
      return { status: await statusText(), tooltip, servers: running };
    });

    await step('workbench-with-status', async () => {
      // Trusting from the extension's own status item: it opens the Workspace Trust editor.
      await page.locator('.statusbar-item', { hasText: 'kitsoki-miner: trust this folder to start' }).click();
      await page.locator('.workspace-trust-editor a.monaco-button', { hasText: exactly('Trust') }).click();
      await waitForStatus(/proposals: 3/, 'once trusted, the server starts and reports the pending proposals');
      const running = serversFor(config.workspace);
      check(running.length === 1, `one server for the workspace once trusted: ${JSON.stringify(running)}`);
      await page.locator('.tab', { hasText: 'Workspace Trust' }).locator('.codicon-close').click();
      return { status: await statusText(), servers: running };
    });

    await step('lenses-on-kitsoki-yaml', async () => {
      await openFile('.kitsoki.yaml');
      await waitForLens("[1/2] Set world.test_cmd to 'pytest'");
      const lenses = await lensTexts();
      check(lenses.includes('kitsoki-miner: 2 proposals for this file'), `no file lens: ${JSON.stringify(lenses)}`);
      check(lenses.some((l) => l.startsWith('[2/2] Bind ticket to host.gh.ticket')), `no binding lens: ${lenses}`);
      return { lenses };
    });

    await step('lenses-on-the-story', async () => {
      await openFile('stories/release-desk/app.yaml');
      await waitForLens("Accept: Add 1 synonym to release-desk's deploy (runs flows)");
      const lenses = await lensTexts();
      for (const text of ['Refine', 'Reject', 'Diff']) {
        check(lenses.includes(text), `no ${text} lens on the story: ${JSON.stringify(lenses)}`);
      }
      return { lenses };
    });

    await step('hover-with-the-evidence', async () => {
      await goToLine(14);
      await page.keyboard.press('Control+K');
      await page.keyboard.press('Control+I');
      const hover = page.locator('.monaco-hover:not(.hidden)').first();
      await hover.waitFor({ timeout: STEP_TIMEOUT });
      await hover.locator('.hover-contents', { hasText: 'Asked as' }).first()
        .waitFor({ timeout: STEP_TIMEOUT }).catch(() => undefined);
      const text = await hover.innerText();
      check(/Asked as: "take the build live" ×\d+/.test(text), `the hover does not show the evidence: "${text}"`);
      check(!/score 0|\.jsonl:(\d+)-\1\b|Bash: .*bash: /.test(text), `the hover reads oddly: "${text}"`);
      return { hover: text };
    });

    await step('diff-of-the-world-proposal', async () => {
      await page.keyboard.press('Escape');
      await openFile('.kitsoki.yaml');
      await clickLens("[1/2] Set world.test_cmd to 'pytest'");
      await pick('Show diff');
      const diff = page.locator('.monaco-diff-editor').first();
      await diff.waitFor({ timeout: STEP_TIMEOUT });
      await page.locator('.monaco-diff-editor .editor.modified .view-line', { hasText: 'test_cmd: pytest' }).first()
        .waitFor({ timeout: STEP_TIMEOUT });
      const title = await page.locator('.tab.active').innerText();
      return { tab: title };
    });

    let keptDetail;
    await step('accept-kept', async () => {
      await openFile('.kitsoki.yaml');
      await clickLens("[1/2] Set world.test_cmd to 'pytest'");
      await pick('Accept');
      keptDetail = await confirmAccept("Set world.test_cmd to 'pytest'");
      const toast = await waitForToast(/kept "Set world\.test_cmd to 'pytest'": structural checks passed, no flow exercises it\./, 'the kept accept');
      await waitForStatus(/proposals: 2/, 'a kept proposal leaves the count');
      await page.locator('.codelens-decoration a', { hasText: 'Set world.test_cmd' })
        .waitFor({ state: 'detached', timeout: STEP_TIMEOUT }).catch(async () => {
          throw new Error(`the kept proposal's lens stays: ${JSON.stringify(await lensTexts())}`);
        });
      return { confirmation: keptDetail, toast };
    });

    await step('diff-tab-says-decided', async () => {
      // The diff tab opened before the accept: its right side now says what became of it.
      await page.locator('.tab', { hasText: 'proposal: Set world.test_cmd' }).first().click();
      await page.locator('.monaco-diff-editor .editor.modified .view-lines').first().click();
      await page.keyboard.press('Control+Home');
      const line = page.locator('.monaco-diff-editor .editor.modified .view-line', { hasText: 'was accepted and kept' });
      await line.first().waitFor({ timeout: STEP_TIMEOUT });
      return { line: await line.first().innerText() };
    });

    await step('accept-reverted', async () => {
      await closeToasts();
      await openFile('stories/release-desk/app.yaml');
      await clickLens("Accept: Add 1 synonym to release-desk's deploy (runs flows)");
      const confirmation = await confirmAccept("Add 1 synonym to release-desk's deploy");
      const toast = await waitForToast(/reverted "Add 1 synonym to release-desk's deploy"/, 'the reverted accept');
      check(/Failing: .*preview/.test(toast.text), `the revert does not show the failing flow: "${toast.text}"`);
      check(!/got {2}\(/.test(toast.text), `an empty value reads as nothing: "${toast.text}"`);
      await waitForLens("Accept again: Add 1 synonym to release-desk's deploy (runs flows)");
      return { confirmation, toast };
    });

    await step('refine-opens-a-labelled-draft', async () => {
      await closeToasts();
      await openFile('.kitsoki.yaml');
      await waitForLens('Accept: Bind ticket to host.gh.ticket (runs flows)'); // alone on its line now
      await clickLens('Refine');
      const tab = page.locator('.tab.active', { hasText: 'DRAFT .kitsoki.yaml (kitsoki-miner proposal)' });
      await tab.waitFor({ timeout: STEP_TIMEOUT }).catch(async () => {
        throw new Error(`the draft's tab reads "${await page.locator('.tab.active').innerText()}"`);
      });
      await waitForLens('DRAFT of .kitsoki.yaml for "Bind ticket to host.gh.ticket": not the live file');
      // The draft is no file of the workspace: the explorer does not reveal .artifacts/.
      const explorer = await page.locator('.explorer-folders-view .monaco-list-row').allInnerTexts();
      check(explorer.length > 0 && !explorer.some((row) => row.includes('.artifacts')),
        `the explorer shows the drafts folder: ${JSON.stringify(explorer)}`);
      // It is edited and saved like a file: the edit lands in the staged draft, not the live file.
      await page.locator('.editor-instance .monaco-editor .view-line', { hasText: 'ticket: host.gh.ticket' }).first().click();
      await page.keyboard.press('End');
      await page.keyboard.type(`  ${config.draftEdit}`);
      await page.locator('.tab.active.dirty').waitFor({ timeout: STEP_TIMEOUT });
      await page.keyboard.press('Control+S');
      await page.locator('.tab.active.dirty').waitFor({ state: 'detached', timeout: STEP_TIMEOUT });
      await page.keyboard.press('Control+Home');
      return { tab: await tab.innerText(), lenses: await lensTexts(), explorer };
    });

    await step('accept-the-draft-closes-it', async () => {
      await clickLens('Accept this draft (runs flows)');
      await confirmAccept('Bind ticket to host.gh.ticket');
      await waitForToast(/kept "Bind ticket to host\.gh\.ticket": structural checks passed, no flow exercises it\./, 'the accepted draft');
      await page.locator('.tab', { hasText: 'DRAFT .kitsoki.yaml' }).waitFor({ state: 'detached', timeout: STEP_TIMEOUT });
      return { tabs: await page.locator('.tab').allInnerTexts() };
    });

    if (config.questionsWorkspace) {
      await step('one-question-then-withdrawn', async () => {
        await closeToasts();
        await page.goto(`${config.url}/?folder=${encodeURIComponent(config.questionsWorkspace)}`);
        await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
        await answerTrust('Yes, I trust the authors');
        // The server's own first pass raises three proposals: one question card is shown.
        const toast = await waitForToast(/Capture as structure\? "Add 1 synonym/, 'the first question card');
        await waitForStatus(/\$?\(?question\)?|proposals: 3/, 'the questions wait behind the status item');
        await page.waitForTimeout(1500);
        const questions = (await collectNotifications()).filter((t) => t.text.includes('Capture as structure?'));
        check(questions.length === 1, `${questions.length} question cards on screen: ${JSON.stringify(questions)}`);
        await shot('question-card');
        await openFile('stories/release-desk/app.yaml');
        await clickLens('Reject');
        await waitForToast(/rejected "Add 1 synonym/, 'the rejection');
        await page.waitForFunction(() => ![...document.querySelectorAll('.notifications-toasts .notification-list-item-message')]
          .some((e) => (e.textContent ?? '').includes('Capture as structure? "Add 1 synonym')), null, { timeout: STEP_TIMEOUT });
        return { question: toast.text };
      });
    }

    await step('no-error-notification', async () => {
      await collectNotifications();
      const errors = report.notifications.filter((n) => n.severity.includes('codicon-error'));
      check(errors.length === 0, `error notifications: ${JSON.stringify(errors)}`);
      const status = await statusText();
      check(!/server stopped/.test(status), `the server crashed: the status says "${status}"`);
      return { status };
    });
  } finally {
    save();
    await browser.close();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(String(error?.stack ?? error));
    process.exit(1);
  },
);
