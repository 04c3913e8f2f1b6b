// Drives the sign-up confirm page in Debian's Chromium, as a person would: finds the field by its
// label, types codes, submits, and reports what the page then says. Screenshots go to the
// directory given first (under the cargo target dir, never the repository).
//
//   node signup_confirm.mjs <screenshot-dir> confirm <url> <wrong-code> <right-code>
//   node signup_confirm.mjs <screenshot-dir> lock <url> <wrong-code>
//   node signup_confirm.mjs <screenshot-dir> view <url>
//
// Prints one JSON object on its last line.
import { chromium } from 'playwright-core';
import path from 'node:path';

const [shots, mode, url, ...codes] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
const out = {};
try {
  const page = await browser.newPage({ viewport: { width: 480, height: 720 } });
  const shot = (name) => page.screenshot({ path: path.join(shots, `${mode}-${name}.png`), fullPage: true });
  const text = async () => (await page.locator('main').innerText()).trim();
  const submit = async (code) => {
    const field = page.getByLabel('Test code');
    await field.fill(code);
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Confirm' }).click()]);
  };
  await page.goto(url);
  out.title = await page.title();
  out.heading = (await page.locator('h1').innerText()).trim();
  if (mode === 'confirm') {
    out.label = (await page.locator('label[for="code"]').innerText()).trim();
    await shot('form');
    await submit(codes[0]);
    out.after_wrong = (await page.getByRole('alert').innerText()).trim();
    out.invalid = await page.getByLabel('Test code').getAttribute('aria-invalid');
    await shot('wrong');
    await submit(codes[1]);
    out.after_right = await text();
    await shot('confirmed');
  } else if (mode === 'lock') {
    for (let i = 0; i < 3; i++) await submit(codes[0]);
    out.heading = (await page.locator('h1').innerText()).trim();
    out.text = await text();
    await shot('locked');
  } else {
    out.text = await text();
    await shot('view');
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
