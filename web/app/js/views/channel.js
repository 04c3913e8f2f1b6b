// A channel: its history (newest at the bottom, older pages loaded on scroll), live changes, and
// the composer (Enter sends, Shift+Enter breaks the line, @handle completion, the 10,000-character
// limit shown as it nears). Edit and delete of one's own messages; staff delete any.

import { api, del, get, patch, post, query } from '../api.js';
import { h, replace } from '../dom.js';
import { messageItem, seqOf } from '../messages.js';

const MAX_CHARS = 10000;
/// The counter appears when this few characters are left.
const WARN_LEFT = 1000;
const PAGE = 50;

export function channelView(ctx, channel) {
  const { me } = ctx;
  const byId = new Map();
  let next = null;
  let loadingOlder = false;
  let destroyed = false;

  const warning = (where) =>
    channel.external
      ? h('p', { class: `external-warning ${where}`, role: 'note' },
          h('strong', {}, 'External channel: '), 'people outside the organization read what is posted here.')
      : null;

  const list = h('ol', { class: 'messages', 'aria-label': `Messages in #${channel.name}`, 'aria-live': 'polite', tabindex: 0 });
  const older = h('p', { class: 'older', role: 'status' });
  const scroller = h('div', { class: 'scroller' }, older, list);
  const status = h('p', { class: 'form-error', role: 'alert' });

  const body = h('textarea', {
    id: 'composer-body', name: 'body', rows: 2, autocomplete: 'off', spellcheck: 'true',
    'aria-autocomplete': 'list', 'aria-controls': 'completion',
    'aria-describedby': 'composer-help composer-count',
    placeholder: `Message #${channel.name}`,
  });
  const completion = h('ul', { id: 'completion', class: 'completion', role: 'listbox', 'aria-label': 'People to mention', hidden: true });
  const counter = h('span', { id: 'composer-count', class: 'counter', 'aria-live': 'polite' });
  const send = h('button', { type: 'submit' }, 'Send');
  const form = h('form', { class: 'composer', 'aria-label': 'Write a message', onsubmit: (e) => { e.preventDefault(); submit(); } },
    warning('beside-composer'),
    h('label', { for: 'composer-body', class: 'visually-hidden' }, `Message #${channel.name}`),
    h('div', { class: 'composer-box' }, body, completion),
    h('div', { class: 'composer-foot' },
      h('span', { id: 'composer-help', class: 'help' }, 'Enter sends · Shift+Enter breaks the line · @ mentions'),
      counter, send),
    status);

  const el = h('section', { class: 'view channel-view', 'aria-labelledby': 'channel-title' },
    h('header', { class: 'view-head' },
      h('h1', { id: 'channel-title' }, `#${channel.name}`),
      channel.topic ? h('p', { class: 'topic' }, channel.topic) : null,
      warning('in-header')),
    scroller,
    form);

  // ---- history ----

  const nearBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
  const toBottom = () => { scroller.scrollTop = scroller.scrollHeight; };

  function itemFor(m) {
    const mine = m.author?.id === me.id;
    return messageItem(m, {
      me,
      actions: { mayEdit: mine, mayDelete: mine || me.staff, onEdit: () => startEdit(m.id), onDelete: () => remove(m.id) },
    });
  }

  /// Adds or replaces a message; an older version never replaces a newer one.
  function upsert(m) {
    const known = byId.get(m.id);
    if (known && known.version >= m.version) return false;
    byId.set(m.id, m);
    const li = itemFor(m);
    const old = list.querySelector(`li[data-id="${CSS.escape(m.id)}"]`);
    if (old) {
      if (old.classList.contains('editing')) return true; // the editor keeps its place; saved later
      old.replaceWith(li);
      return true;
    }
    const seq = seqOf(m.id);
    const after = [...list.children].find((c) => seqOf(c.dataset.id) > seq);
    list.insertBefore(li, after || null);
    return true;
  }

  async function loadNewest() {
    const page = await get(`/channels/${channel.id}/messages${query({ limit: PAGE })}`);
    if (destroyed) return;
    next = page.next_cursor;
    page.items.slice().reverse().forEach(upsert);
    toBottom();
    markLatestRead();
    await fillScreen();
  }

  async function loadOlder() {
    if (!next || loadingOlder || destroyed) return;
    loadingOlder = true;
    older.textContent = 'Loading older messages…';
    try {
      const page = await get(`/channels/${channel.id}/messages${query({ limit: PAGE, cursor: next })}`);
      if (destroyed) return;
      const before = scroller.scrollHeight;
      next = page.next_cursor;
      page.items.forEach(upsert);
      scroller.scrollTop += scroller.scrollHeight - before;
      older.textContent = next ? '' : 'The beginning of the channel.';
    } catch (e) {
      older.textContent = e.message;
    } finally {
      loadingOlder = false;
    }
  }

  /// Short histories do not scroll: load until they do or the channel begins.
  async function fillScreen() {
    while (next && !destroyed && scroller.scrollHeight <= scroller.clientHeight + 10) await loadOlder();
    if (!next) older.textContent = 'The beginning of the channel.';
  }

  scroller.addEventListener('scroll', () => {
    if (scroller.scrollTop < 120) loadOlder();
  });

  function markLatestRead() {
    const last = list.lastElementChild;
    if (last && document.visibilityState === 'visible') ctx.markRead(channel.id, last.dataset.id);
  }
  const onVisible = () => markLatestRead();
  document.addEventListener('visibilitychange', onVisible);

  // ---- edit and delete ----

  function startEdit(id) {
    const m = byId.get(id);
    const li = list.querySelector(`li[data-id="${CSS.escape(id)}"]`);
    if (!m || !li) return;
    li.classList.add('editing');
    const field = h('textarea', { class: 'edit-body', rows: 3, 'aria-label': 'Edit message' });
    field.value = m.body;
    const error = h('p', { class: 'form-error', role: 'alert' });
    const done = () => {
      li.classList.remove('editing');
      const current = byId.get(id);
      li.replaceWith(itemFor(current));
    };
    const save = async () => {
      const text = field.value;
      if (!text.trim()) return void (error.textContent = 'A message needs some text; delete it instead.');
      try {
        const updated = await patch(`/messages/${encodeURIComponent(id)}`, { body: text });
        if (updated.version > byId.get(id).version) byId.set(id, updated);
        done();
      } catch (e) {
        error.textContent = e.message;
      }
    };
    field.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); save(); }
      if (e.key === 'Escape') { e.preventDefault(); done(); }
    });
    const editor = h('form', { class: 'editor', onsubmit: (e) => { e.preventDefault(); save(); } },
      field,
      h('div', { class: 'row' },
        h('button', { type: 'submit' }, 'Save'),
        h('button', { type: 'button', class: 'secondary', onclick: done }, 'Cancel')),
      error);
    li.querySelector('.body').replaceWith(editor);
    li.querySelector('.msg-actions')?.remove();
    field.focus();
  }

  async function remove(id) {
    if (!window.confirm('Delete this message? Everyone in the channel sees that it was deleted.')) return;
    try {
      upsert(await del(`/messages/${encodeURIComponent(id)}`));
    } catch (e) {
      status.textContent = e.message;
    }
  }

  // ---- composer ----

  const count = (s) => [...s].length;

  function updateCounter() {
    const left = MAX_CHARS - count(body.value);
    counter.textContent = left <= WARN_LEFT ? (left >= 0 ? `${left} characters left` : `${-left} characters over the limit`) : '';
    counter.classList.toggle('over', left < 0);
    send.disabled = left < 0;
  }

  async function submit() {
    const text = body.value;
    if (!text.trim() || count(text) > MAX_CHARS) return;
    status.textContent = '';
    send.disabled = true;
    try {
      const m = await api('POST', `/channels/${channel.id}/messages`, { body: text, idempotency_key: crypto.randomUUID() });
      body.value = '';
      upsert(m);
      toBottom();
      markLatestRead();
    } catch (e) {
      status.textContent = e.message;
    } finally {
      updateCounter();
      body.focus();
    }
  }

  // @handle completion: the word before the caret, matched against the handles known.
  let choices = [];
  let active = -1;
  function mentionPrefix() {
    const before = body.value.slice(0, body.selectionStart);
    const m = /(^|\s)@([a-z0-9_.-]{0,32})$/i.exec(before);
    return m ? m[2].toLowerCase() : null;
  }
  function closeCompletion() {
    choices = [];
    active = -1;
    completion.hidden = true;
    body.removeAttribute('aria-activedescendant');
  }
  function showCompletion() {
    const prefix = mentionPrefix();
    if (prefix === null) return closeCompletion();
    choices = ctx.people().filter((p) => p.handle.startsWith(prefix) || p.name.toLowerCase().startsWith(prefix)).slice(0, 6);
    if (!choices.length) return closeCompletion();
    active = 0;
    renderCompletion();
  }
  function renderCompletion() {
    replace(completion, choices.map((p, i) =>
      h('li', { id: `completion-${i}`, role: 'option', 'aria-selected': String(i === active), class: i === active ? 'active' : '',
        onmousedown: (e) => { e.preventDefault(); choose(i); } },
      h('span', { class: 'handle' }, `@${p.handle}`), ' ', h('span', { class: 'name' }, p.name))));
    completion.hidden = false;
    body.setAttribute('aria-activedescendant', `completion-${active}`);
  }
  function choose(i) {
    const p = choices[i];
    const caret = body.selectionStart;
    const before = body.value.slice(0, caret).replace(/@[a-z0-9_.-]*$/i, `@${p.handle} `);
    body.value = before + body.value.slice(caret);
    body.selectionStart = body.selectionEnd = before.length;
    closeCompletion();
    updateCounter();
    body.focus();
  }

  body.addEventListener('input', () => { updateCounter(); showCompletion(); });
  body.addEventListener('blur', () => setTimeout(closeCompletion, 100));
  body.addEventListener('keydown', (e) => {
    if (choices.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        active = (active + (e.key === 'ArrowDown' ? 1 : choices.length - 1)) % choices.length;
        return renderCompletion();
      }
      if ((e.key === 'Enter' || e.key === 'Tab') && !e.shiftKey) { e.preventDefault(); return choose(active); }
      if (e.key === 'Escape') { e.preventDefault(); return closeCompletion(); }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  if (!me.may_write) {
    body.disabled = true;
    send.disabled = true;
    body.placeholder = 'This credential can only read.';
  }

  return {
    el,
    channelId: channel.id,
    title: `#${channel.name}`,
    async start() {
      updateCounter();
      try {
        await loadNewest();
      } catch (e) {
        older.textContent = e.message;
      }
    },
    focus: () => body.focus(),
    onEvent(item) {
      if (item.channel_id !== channel.id || !item.message) return;
      const stick = nearBottom();
      if (upsert(item.message) && item.kind === 'message.created') {
        if (stick) toBottom();
        markLatestRead();
      }
    },
    destroy() {
      destroyed = true;
      document.removeEventListener('visibilitychange', onVisible);
    },
  };
}
