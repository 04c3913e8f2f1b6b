// Renders every page of the pages site in headless Chromium at phone and desktop width, takes a
// full-page screenshot of each, and reports console errors, failed requests, horizontal overflow
// and missing landmarks. Run by tests/pages.rs:
//   node tests/js/pages.mjs <base-url> <screenshot-dir> <path>...
// Prints one JSON line {"screenshots": [...], "problems": [...]}; exits 1 when there are problems.
import { chromium } from 'playwright-core';
import path from 'node:path';

const [base, outDir, ...paths] = process.argv.slice(2);
if (!base || !outDir || paths.length === 0) {
  console.error('usage: node pages.mjs <base-url> <screenshot-dir> <path>...');
  process.exit(2);
}

const viewports = [
  { name: 'phone', width: 390, height: 844, isMobile: true, deviceScaleFactor: 2 },
  { name: 'desktop', width: 1280, height: 800, isMobile: false, deviceScaleFactor: 1 },
];

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
const problems = [];
const screenshots = [];
try {
  for (const vp of viewports) {
    const context = await browser.newContext({
      viewport: { width: vp.width, height: vp.height },
      isMobile: vp.isMobile,
      deviceScaleFactor: vp.deviceScaleFactor,
      javaScriptEnabled: false,
    });
    // A second context with scripts on, only to measure the layout (the site itself has none).
    const measure = await browser.newContext({ viewport: { width: vp.width, height: vp.height }, isMobile: vp.isMobile });
    for (const p of paths) {
      const where = `${vp.name} ${p}`;
      for (const ctx of [context, measure]) {
        const page = await ctx.newPage();
        page.on('console', (msg) => {
          if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`${where}: console ${msg.type()}: ${msg.text()}`);
        });
        page.on('pageerror', (err) => problems.push(`${where}: page error: ${err.message}`));
        page.on('requestfailed', (req) => problems.push(`${where}: request failed: ${req.url()} ${req.failure()?.errorText}`));
        page.on('response', (res) => {
          const expected404 = res.url() === base + p && res.status() === 404 && p.startsWith('/pulse/');
          if (res.status() >= 400 && !expected404) problems.push(`${where}: ${res.status()} for ${res.url()}`);
        });
        await page.goto(base + p, { waitUntil: 'load' });
        if (ctx === context) {
          const file = path.join(outDir, `pages-${vp.name}-${p === '/' ? 'home' : p.slice(1).replaceAll('/', '-')}.png`);
          await page.screenshot({ path: file, fullPage: true });
          screenshots.push(file);
        } else {
          const layout = await page.evaluate(() => ({
            overflow: document.documentElement.scrollWidth - window.innerWidth,
            h1: (() => { const h = document.querySelector('h1'); if (!h) return 0; const r = h.getBoundingClientRect(); return r.width * r.height; })(),
            landmarks: ['header', 'nav', 'main', 'footer'].filter((t) => !document.querySelector(t)),
            styled: getComputedStyle(document.body).marginTop === '0px',
            lang: document.documentElement.lang,
            smallText: [...document.querySelectorAll('main p, main li, nav a')]
              .filter((e) => parseFloat(getComputedStyle(e).fontSize) < 12).length,
          }));
          if (layout.overflow > 0) problems.push(`${where}: the page is ${layout.overflow}px wider than the screen`);
          if (!layout.h1) problems.push(`${where}: no visible h1`);
          if (layout.landmarks.length) problems.push(`${where}: missing ${layout.landmarks.join(', ')}`);
          if (!layout.styled) problems.push(`${where}: the stylesheet did not apply (CSP?)`);
          if (layout.lang !== 'en') problems.push(`${where}: no lang`);
          if (layout.smallText) problems.push(`${where}: ${layout.smallText} elements with text under 12px`);
        }
        await page.close();
      }
    }
    await context.close();
    await measure.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ screenshots, problems }));
process.exit(problems.length ? 1 : 0);
