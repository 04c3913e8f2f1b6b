// The web client in headless Chromium, as people use it. Run by tests/webapp.rs:
//   node tests/js/webapp.mjs '<json config>'
// config: {base, shots, ada, grace, guest (sign-in/invite URLs), channels: {general, history, partners}}.
// Two people in two browser contexts: one types, the other sees it within a second without
// reloading; edits and deletes show up live; a dropped socket is caught up from /events; a guest
// in an external channel sees the warning; staff pages make and revoke; screenshots of the main
// views at phone and desktop width. Prints one JSON line {problems, screenshots, tokens}.
import { chromium } from 'playwright-core';
import path from 'node:path';
import fs from 'node:fs';

const config = JSON.parse(process.argv[2]);
const { base, shots, channels } = config;
fs.mkdirSync(shots, { recursive: true });
const LIVE = { timeout: 1000 }; // the user-visible bar: seen within a second, without reloading
const LOAD = { timeout: 10000 };

const problems = [];
const screenshots = [];
const tokens = {};
/// How long the other person waited, in ms (reported, never asserted: Playwright's polling is in it).
const seen = {};
const timed = async (name, action, wait) => {
  const t0 = Date.now();
  await action();
  await wait();
  seen[name] = Date.now() - t0;
};
const steps = [];
const step = (s) => { steps.push(s); process.stderr.write(`step: ${s}\n`); };
const check = (ok, what) => { if (!ok) problems.push(`${steps.at(-1)}: ${what}`); };

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});

const desktop = { viewport: { width: 1280, height: 800 } };
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

async function open(ctxOptions, url, name, expect404 = false) {
  const context = await browser.newContext({ ...ctxOptions, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  watch(page, name, expect404);
  if (url) {
    await page.goto(url);
    await page.locator('html[data-live="true"]').waitFor(LOAD);
  }
  return { context, page };
}

const pages = [];
/// `expect404`: the page's own refused link, which Chromium logs.
function watch(page, name, expect404 = false) {
  pages.push([name, page]);
  page.on('console', (msg) => {
    if (expect404 && msg.text().includes('status of 404')) return;
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`${name}: console ${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`${name}: page error: ${err.message}`));
  page.on('dialog', (d) => d.accept());
}

async function shot(page, name) {
  const file = path.join(shots, `${name}.png`);
  await page.screenshot({ path: file });
  screenshots.push(file);
}

/// Problems a person would meet: unlabelled controls, a page wider than the screen.
async function audit(page, where) {
  const found = await page.evaluate(() => ({
    unlabelled: [...document.querySelectorAll('input, textarea, select, button')]
      .filter((e) => e.offsetParent !== null)
      .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.tagName === 'BUTTON' && e.textContent.trim()))
      .map((e) => e.outerHTML.slice(0, 80)),
    overflow: document.documentElement.scrollWidth - window.innerWidth,
  }));
  check(found.unlabelled.length === 0, `${where}: unlabelled controls ${found.unlabelled.join(' | ')}`);
  check(found.overflow <= 0, `${where}: ${found.overflow}px wider than the screen`);
}

const msg = (page, text) => page.locator('ol.messages > li.msg', { hasText: text });
const bodies = (page) => page.locator('ol.messages > li.msg .body');

try {
  step('Ada signs in with her one-use link');
  const ada = await open(desktop, config.ada, 'ada');
  check(!ada.page.url().includes('login='), 'the code stays in the address bar');
  tokens.ada = await ada.page.evaluate(() => localStorage.getItem('agora.session'));
  check(tokens.ada?.startsWith('chs_'), 'no browser session in the page storage');

  step('the same link a second time is refused');
  const again = await open(desktop, null, 'again', true);
  await again.page.goto(config.ada);
  await again.page.locator('#signin-message', { hasText: 'used already or has expired' }).waitFor(LOAD);
  await again.context.close();

  step('Grace signs in; a dropped socket will be simulated on her side');
  const grace = await browser.newContext({ ...desktop });
  let dropping = false;
  let dropped = [];
  const sockets = [];
  await grace.routeWebSocket(/\/cable/, (ws) => {
    const server = ws.connectToServer();
    server.onMessage((m) => { if (dropping) dropped.push(String(m)); else ws.send(m); });
    sockets.push({ ws, server });
  });
  const gracePage = await grace.newPage();
  watch(gracePage, 'grace');
  await gracePage.goto(config.grace);
  await gracePage.locator('html[data-live="true"]').waitFor(LOAD);

  step('both open #general; labels mark agents and bots');
  for (const p of [ada.page, gracePage]) {
    await p.goto(`${base}/app/#/c/${channels.general}`);
    await p.locator('html[data-live="true"]').waitFor(LOAD);
    await msg(p, 'build 41 passed').waitFor(LOAD);
  }
  const botItem = msg(gracePage, 'build 41 passed');
  check((await botItem.locator('.actor').textContent()) === 'Build bot', 'the bot\'s actor_label');
  check(await botItem.locator('.badge-bot').isVisible(), 'bot messages are marked');
  check(await botItem.evaluate((e) => e.classList.contains('source-bot')), 'bot message styled apart');
  const agentItem = msg(gracePage, 'summary of the week');
  check((await agentItem.locator('.actor').textContent()) === "Ada's agent (bootstrap)", 'the agent\'s actor_label');
  check(await agentItem.locator('.badge-agent').isVisible(), 'agent messages are marked');
  const humanItem = msg(gracePage, 'good morning');
  check((await humanItem.locator('.badge').count()) === 0, 'people are not badged');

  step('Ada completes @gr to @grace and sends with Enter');
  const box = ada.page.locator('#composer-body');
  await box.click();
  await box.pressSequentially('Hello @gr');
  await ada.page.locator('#completion [role=option]', { hasText: '@grace' }).waitFor(LIVE);
  await box.press('Enter');
  check((await box.inputValue()) === 'Hello @grace ', `completion wrote "${await box.inputValue()}"`);
  await box.pressSequentially('the deploy is done');
  await box.press('Shift+Enter');
  await box.pressSequentially('second line');
  check((await box.inputValue()).includes('\n'), 'Shift+Enter breaks the line');

  step('Grace sees it within a second, her mention highlighted');
  const live = msg(gracePage, 'the deploy is done');
  await timed('created', () => box.press('Enter'), () => live.waitFor(LIVE));
  check((await live.locator('mark.mention-me').textContent()) === '@grace', 'the mention is highlighted');
  check((await live.locator('.body').textContent()).includes('second line'), 'both lines arrive');
  check((await box.inputValue()) === '', 'the composer is cleared');

  step('Ada edits her message; Grace sees the edit within a second');
  const mine = msg(ada.page, 'the deploy is done');
  await mine.getByRole('button', { name: /^Edit/ }).click();
  const editor = ada.page.locator('textarea.edit-body');
  await editor.fill('Hello @grace the deploy is finished');
  await timed('updated', () => editor.press('Enter'),
    () => msg(gracePage, 'the deploy is finished').locator('.edited').waitFor(LIVE));

  step('Ada deletes it; Grace sees the tombstone within a second');
  await timed('deleted', () => msg(ada.page, 'the deploy is finished').getByRole('button', { name: /^Delete/ }).click(),
    () => gracePage.locator('li.msg.deleted', { hasText: 'This message was deleted.' }).waitFor(LIVE));
  check((await msg(gracePage, 'the deploy is finished').count()) === 0, 'the deleted text is gone');

  step('the limit shows as it nears');
  await box.fill('x'.repeat(9500));
  await box.press('x');
  await ada.page.locator('#composer-count', { hasText: '499 characters left' }).waitFor(LIVE);
  await box.fill('x'.repeat(10001));
  await box.press('Backspace');
  await box.press('x');
  await ada.page.locator('#composer-count', { hasText: '1 characters over the limit' }).waitFor(LIVE);
  check(await ada.page.locator('.composer button[type=submit]').isDisabled(), 'send is off over the limit');
  await box.fill('');

  step('unread counts: Grace reads #history while Ada posts in #general');
  await gracePage.goto(`${base}/app/#/c/${channels.history}`);
  await msg(gracePage, 'history 70').waitFor(LOAD);
  await box.fill('thanks @grace, lunch at noon');
  await box.press('Enter');
  const unread = gracePage.locator(`#channel-list a[href="#/c/${channels.general}"] .unread`);
  await unread.waitFor(LIVE);
  check((await unread.textContent()) === '1', `unread shows ${await unread.textContent()}`);

  step('older history loads on scroll, newest at the bottom');
  const scroller = gracePage.locator('.channel-view .scroller');
  check((await bodies(gracePage).first().textContent()) === 'history 21', 'the first page is the newest 50');
  check((await bodies(gracePage).last().textContent()) === 'history 70', 'the newest is at the bottom');
  await scroller.evaluate((e) => { e.scrollTop = 0; });
  await gracePage.locator('ol.messages > li.msg .body', { hasText: /^history 1$/ }).waitFor(LOAD);
  check((await bodies(gracePage).first().textContent()) === 'history 1', 'the oldest is at the top');
  await gracePage.locator('.older', { hasText: 'The beginning of the channel.' }).waitFor(LOAD);
  check((await gracePage.locator('ol.messages > li.msg').count()) === 70, 'every message once');

  step('opening #general marks it read; the count stays gone after a reload');
  await gracePage.locator(`#channel-list a[href="#/c/${channels.general}"]`).click();
  await msg(gracePage, 'lunch at noon').waitFor(LOAD);
  await unread.waitFor({ state: 'detached', timeout: 1000 });
  await gracePage.waitForResponse((r) => r.url().endsWith(`/channels/${channels.general}/read`), LOAD).catch(() => {});
  await gracePage.reload();
  await gracePage.locator('html[data-live="true"]').waitFor(LOAD);
  await msg(gracePage, 'lunch at noon').waitFor(LOAD);
  check((await unread.count()) === 0, 'the read marker was stored');

  step('a dropped socket: what was missed comes from /events after the reconnect');
  await gracePage.locator('html[data-live="true"]').waitFor(LOAD);
  const current = sockets.at(-1);
  dropping = true;
  await box.fill('posted while Grace was offline');
  await box.press('Enter');
  await msg(ada.page, 'posted while Grace was offline').waitFor(LIVE);
  // Wait until the server has sent the frame and it was dropped on the way.
  for (let i = 0; i < 100 && !dropped.some((f) => f.includes('posted while Grace was offline')); i++) {
    await gracePage.waitForTimeout(20);
  }
  check(dropped.some((f) => f.includes('posted while Grace was offline')), 'the frame was sent');
  check((await msg(gracePage, 'posted while Grace was offline').count()) === 0, 'the dropped frame was not shown');
  dropping = false;
  await gracePage.evaluate(() => { delete document.documentElement.dataset.live; });
  await timed('caught_up_after_reconnect', () => { current.ws.close(); current.server.close(); },
    () => msg(gracePage, 'posted while Grace was offline').waitFor({ timeout: 5000 }));
  await gracePage.locator('html[data-live="true"]').waitFor(LOAD);
  check(sockets.length >= 2, 'the client reconnected');

  step('search and mentions');
  await ada.page.locator('#search-q').fill('lunch noon');
  await ada.page.locator('#search-q').press('Enter');
  await msg(ada.page, 'lunch at noon').waitFor(LOAD);
  check((await ada.page.locator('.results .where').first().textContent()) === '#general', 'a result names its channel');
  await gracePage.locator('#mentions-link').click();
  await msg(gracePage, 'lunch at noon').waitFor(LOAD);
  check((await msg(gracePage, 'deploy is finished').count()) === 0, 'deleted messages are not mentions');

  step('the guest in an external channel sees the warning, in the header and beside the composer');
  const guest = await open(phone, config.guest, 'guest');
  await guest.page.locator('.external-warning.in-header').waitFor(LOAD);
  for (const where of ['.in-header', '.beside-composer']) {
    const text = await guest.page.locator(`.external-warning${where}`).textContent();
    check(/people outside the organization read/.test(text), `warning ${where}: ${text}`);
  }
  check((await guest.page.locator('#channel-list li').count()) === 1, 'the guest sees only the external channel');
  check(await guest.page.locator('#staff-link').isHidden(), 'no staff pages for a guest');
  await audit(guest.page, 'guest phone');
  await shot(guest.page, 'external-warning-phone');

  step('staff pages: a bot with its token shown once, a key made and revoked, a channel');
  await ada.page.goto(`${base}/app/#/staff`);
  await ada.page.locator('#staff-bots').waitFor(LOAD);
  await ada.page.locator('#staff-bots').getByLabel('Name').fill('Helper');
  await ada.page.locator('#staff-bots').getByLabel('Handle').fill('helper');
  await ada.page.locator('#staff-bots').getByRole('button', { name: 'Create bot' }).click();
  const token = ada.page.locator('#staff-bots .secret');
  await token.waitFor(LOAD);
  check((await token.inputValue()).startsWith('chatbot_'), 'the bot token is shown');
  await ada.page.locator('#staff-bots .secret-box').getByRole('button', { name: 'Copy' }).click();
  await ada.page.locator('#staff-bots .copied', { hasText: 'Copied.' }).waitFor(LOAD);
  const copied = await ada.page.evaluate(() => navigator.clipboard.readText());
  check(copied === (await token.inputValue()), 'the copy button copies the token');
  await ada.page.locator('#staff-bots .items li', { hasText: '@helper' }).waitFor(LOAD);

  await ada.page.locator('#staff-keys').getByLabel('Key name').fill('laptop agent');
  await ada.page.locator('#staff-keys').getByRole('button', { name: 'Create key' }).click();
  await ada.page.locator('#staff-keys .secret').waitFor(LOAD);
  check((await ada.page.locator('#staff-keys .secret').inputValue()).startsWith('chat_'), 'the key token is shown');
  await ada.page.locator('#staff-keys .items li', { hasText: 'laptop agent' }).getByRole('button', { name: /Revoke/ }).click();
  await ada.page.locator('#staff-keys .items li', { hasText: 'laptop agent' }).locator('.item-detail', { hasText: 'revoked' }).waitFor(LOAD);

  await ada.page.locator('#staff-connectors').getByLabel('Person').selectOption({ label: 'Grace (@grace)' });
  await ada.page.locator('#staff-connectors').getByLabel('Scope').selectOption('read');
  await ada.page.locator('#staff-connectors').getByRole('button', { name: 'Issue token' }).click();
  await ada.page.locator('#staff-connectors .secret').waitFor(LOAD);
  const connector = ada.page.locator('#staff-connectors .items li', { hasText: 'Grace · read' });
  await connector.getByRole('button', { name: /Revoke/ }).click();
  await connector.locator('.item-detail', { hasText: 'revoked' }).waitFor(LOAD);

  await ada.page.locator('#staff-invites').getByLabel('Name').fill('Olga');
  await ada.page.locator('#staff-invites').getByLabel('E-mail address').fill('olga@outside.example');
  await ada.page.locator('#staff-invites').getByLabel('#partners').check();
  await ada.page.locator('#staff-invites').getByRole('button', { name: 'Create invitation' }).click();
  const inviteUrl = await ada.page.locator('#staff-invites .secret').inputValue();
  check(inviteUrl.startsWith(`${base}/app/?invite=`), `the invitation link ${inviteUrl}`);
  const olga = ada.page.locator('#staff-invites .items li', { hasText: 'olga@outside.example' });
  await olga.getByRole('button', { name: /Withdraw/ }).click();
  await olga.locator('.item-detail', { hasText: 'withdrawn' }).waitFor(LOAD);

  await ada.page.locator('#staff-channels').getByLabel('Name').fill('random');
  await ada.page.locator('#staff-channels').getByRole('button', { name: 'Create channel' }).click();
  await ada.page.locator('#channel-list a', { hasText: '#random' }).waitFor(LOAD);
  await ada.page.locator('#staff-channels .items li', { hasText: '#random' }).getByRole('button', { name: 'Members of #random' }).click();
  const add = ada.page.locator('.members').getByLabel('Add a member');
  await add.selectOption({ label: 'Grace (@grace)' });
  await ada.page.locator('.members').getByRole('button', { name: 'Add' }).click();
  await gracePage.locator('#channel-list a', { hasText: '#random' }).waitFor(LIVE);
  await ada.page.locator('.members').getByRole('button', { name: 'Remove @grace from #random' }).click();
  await gracePage.locator('#channel-list a', { hasText: '#random' }).waitFor({ state: 'detached', timeout: 1000 });
  await audit(ada.page, 'staff desktop');

  step('screenshots at phone and desktop width');
  for (const [name, vp] of [['phone', phone], ['desktop', desktop]]) {
    const ctx = await browser.newContext(vp);
    await ctx.addInitScript((t) => localStorage.setItem('agora.session', t), tokens.ada);
    const page = await ctx.newPage();
    watch(page, `shots ${name}`);
    const views = [
      ['channel', `#/c/${channels.general}`, 'li.msg'],
      ['external', `#/c/${channels.partners}`, '.external-warning'],
      ['search', `#/search/${encodeURIComponent('lunch')}`, '.results li.msg'],
      ['mentions', '#/mentions', '.results-view'],
      ['staff', '#/staff', '#staff-keys .items li'],
    ];
    for (const [view, hash, ready] of views) {
      await page.goto(`${base}/app/${hash}`);
      await page.locator('html[data-live="true"]').waitFor(LOAD);
      await page.locator(ready).first().waitFor(LOAD);
      await audit(page, `${view} ${name}`);
      await shot(page, `${view}-${name}`);
    }
    if (name === 'phone') {
      await page.getByRole('button', { name: 'Menu' }).click();
      await page.locator('#sidebar.open').waitFor(LOAD);
      await shot(page, 'channel-list-phone');
    }
    await ctx.close();
  }

  step('keyboard: the composer is reached and used without a mouse');
  await gracePage.locator(`#channel-list a[href="#/c/${channels.general}"]`).click();
  await msg(gracePage, 'lunch at noon').waitFor(LOAD);
  await ada.page.goto(`${base}/app/#/c/${channels.general}`);
  await ada.page.locator('html[data-live="true"]').waitFor(LOAD);
  await ada.page.locator('#composer-body:focus').waitFor(LOAD);
  await ada.page.keyboard.type('typed with the keyboard only');
  await ada.page.keyboard.press('Enter');
  await msg(gracePage, 'typed with the keyboard only').waitFor(LIVE);

  step('sign out revokes the session');
  await ada.page.getByRole('button', { name: 'Sign out' }).click();
  await ada.page.locator('#signin-message', { hasText: 'signed out' }).waitFor(LOAD);
  check((await ada.page.evaluate(() => localStorage.getItem('agora.session'))) === null, 'the token is dropped');
} catch (e) {
  problems.push(`${steps.at(-1)}: ${e.message.split('\n')[0]}`);
  for (const [name, page] of pages) {
    await page.screenshot({ path: path.join(shots, `failure-${name}.png`) }).catch(() => {});
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ problems, screenshots, tokens, steps, seen_ms: seen }));
process.exit(problems.length ? 1 : 0);
