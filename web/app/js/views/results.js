// Lists of messages from several channels: search results and the mentions of the signed-in
// person. Each result names its channel and links to it.

import { get, query } from '../api.js';
import { h } from '../dom.js';
import { messageItem } from '../messages.js';

function resultsView(ctx, { title, intro, path, params, live }) {
  const { me } = ctx;
  const list = h('ol', { class: 'messages results', 'aria-label': title });
  const note = h('p', { class: 'note', role: 'status' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true, onclick: () => load() }, 'Show more');
  let next = null;
  let shown = 0;
  const seen = new Set();

  function item(m) {
    const ch = ctx.channels.get(m.channel_id);
    const where = h('a', { class: 'where', href: `#/c/${encodeURIComponent(m.channel_id)}` }, ch ? `#${ch.name}` : 'a channel');
    return messageItem(m, { me, context: where });
  }

  async function load() {
    more.disabled = true;
    try {
      const page = await get(`${path}${query({ ...params, cursor: next, limit: 50 })}`);
      next = page.next_cursor;
      for (const m of page.items) {
        if (seen.has(m.id)) continue;
        seen.add(m.id);
        list.append(item(m));
        shown += 1;
      }
      note.textContent = shown ? `${shown}${next ? '+' : ''} ${shown === 1 ? 'message' : 'messages'}` : 'Nothing found.';
    } catch (e) {
      note.textContent = e.message;
    } finally {
      more.hidden = !next;
      more.disabled = false;
    }
  }

  const el = h('section', { class: 'view results-view', 'aria-labelledby': 'results-title' },
    h('header', { class: 'view-head' }, h('h1', { id: 'results-title', tabindex: -1 }, title), intro ? h('p', { class: 'topic' }, intro) : null),
    h('div', { class: 'scroller' }, note, list, more));

  return {
    el,
    title,
    start: load,
    focus: () => el.querySelector('h1').focus(),
    onEvent(ev) {
      if (!live || !ev.message) return;
      const m = ev.message;
      const li = list.querySelector(`li[data-id="${CSS.escape(m.id)}"]`);
      if (li) {
        if (Number(li.dataset.version) < m.version) li.replaceWith(item(m));
      } else if (ev.kind === 'message.created' && live(m)) {
        seen.add(m.id);
        list.prepend(item(m));
        shown += 1;
        note.textContent = `${shown} ${shown === 1 ? 'message' : 'messages'}`;
      }
    },
    destroy() {},
  };
}

export function searchView(ctx, q) {
  return resultsView(ctx, {
    title: `Search: ${q}`,
    intro: 'Every word must match; newest first.',
    path: '/search',
    params: { q },
    live: null,
  });
}

export function mentionsView(ctx) {
  return resultsView(ctx, {
    title: 'Mentions',
    intro: `Messages that mention @${ctx.me.handle}, newest first.`,
    path: '/mentions',
    params: {},
    live: (m) => (m.mentions || []).includes(ctx.me.handle),
  });
}

