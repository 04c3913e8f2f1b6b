// Renders every page of the pages site in headless Chromium at phone and desktop width, takes a
// full-page screenshot of each, and reports console errors, failed requests, horizontal overflow
// and missing landmarks. Run by tests/pages.rs:
//   node tests/js/pages.mjs <base-url> <screenshot-dir> <path>...
// A path written `404:/some/path` must answer 404 (its own load is then not a problem).
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
    for (const arg of paths) {
      const expect404 = arg.startsWith('404:');
      const p = expect404 ? arg.slice(4) : arg;
      const where = `${vp.name} ${p}`;
      for (const ctx of [context, measure]) {
        const page = await ctx.newPage();
        page.on('console', (msg) => {
          // Chromium logs the expected 404 of the page itself; nothing else may be logged.
          const own404 = expect404 && msg.text().includes('status of 404') && msg.location().url === base + p;
          if ((msg.type() === 'error' || msg.type() === 'warning') && !own404) {
            problems.push(`${where}: console ${msg.type()}: ${msg.text()}`);
          }
        });
        page.on('pageerror', (err) => problems.push(`${where}: page error: ${err.message}`));
        page.on('requestfailed', (req) => problems.push(`${where}: request failed: ${req.url()} ${req.failure()?.errorText}`));
        page.on('response', (res) => {
          const own404 = expect404 && res.url() === base + p && res.status() === 404;
          if (res.status() >= 400 && !own404) problems.push(`${where}: ${res.status()} for ${res.url()}`);
        });
        const response = await page.goto(base + p, { waitUntil: 'load' });
        if (response.status() !== (expect404 ? 404 : 200)) problems.push(`${where}: status ${response.status()}`);
        if (ctx === context) {
          const file = path.join(outDir, `pages-${vp.name}-${(p === '/' ? 'home' : p.slice(1).replaceAll('/', '-')) + (expect404 ? '-404' : '')}.png`);
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
