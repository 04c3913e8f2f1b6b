// One message as a list item: who wrote it (its actor_label, with agents and bots marked), when,
// and its text with mentions highlighted. The body is text, always: never parsed as HTML.

import { h, timeOf } from './dom.js';

const HANDLE = /@([a-z0-9][a-z0-9_.-]{0,31})/gi;

/// The channel-local sequence number of a message id (`{channel_id}-{seq}`).
export function seqOf(id) {
  const n = Number(String(id).slice(String(id).lastIndexOf('-') + 1));
  return Number.isFinite(n) ? n : 0;
}

/// The body as text nodes, with the `@handle`s the server recognised as mentions in <mark>.
export function bodyNodes(message, myHandle) {
  const text = message.body;
  const mentioned = new Set((message.mentions || []).map((m) => m.toLowerCase()));
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(HANDLE)) {
    // A handle may not end with punctuation that ends the sentence (`@ada.`).
    let handle = match[1].toLowerCase();
    while (/[._-]$/.test(handle) && !mentioned.has(handle)) handle = handle.slice(0, -1);
    if (!mentioned.has(handle)) continue;
    const end = match.index + 1 + handle.length;
    nodes.push(text.slice(last, match.index));
    const mine = handle === myHandle?.toLowerCase();
    nodes.push(h('mark', { class: mine ? 'mention mention-me' : 'mention' }, text.slice(match.index, end)));
    last = end;
  }
  nodes.push(text.slice(last));
  return nodes;
}

const SOURCE_BADGE = { agent: 'agent', bot: 'bot', imported: 'imported', system: 'system' };

/// A message's list item. `actions` (optional): {mayEdit, mayDelete, onEdit, onDelete}.
/// `context` (optional): a node shown before the author, e.g. the channel in search results.
export function messageItem(message, { me, actions, context } = {}) {
  const badge = SOURCE_BADGE[message.source];
  const mentionsMe = me && (message.mentions || []).includes(me.handle);
  const cls = ['msg', `source-${message.source}`];
  if (message.deleted) cls.push('deleted');
  if (mentionsMe) cls.push('mentions-me');
  if (me && message.author?.id === me.id) cls.push('mine');
  const head = h(
    'div',
    { class: 'msg-head' },
    context,
    h('span', { class: 'actor' }, message.actor_label),
    badge ? h('span', { class: `badge badge-${message.source}`, title: `Written by ${badge === 'agent' ? 'an AI agent' : `a ${badge}`}` }, badge) : null,
    h('time', { datetime: message.created_at, title: new Date(message.created_at).toLocaleString() }, timeOf(message.created_at)),
    message.edited_at && !message.deleted ? h('span', { class: 'edited' }, '(edited)') : null,
  );
  const body = message.deleted
    ? h('p', { class: 'body' }, 'This message was deleted.')
    : h('p', { class: 'body' }, bodyNodes(message, me?.handle));
  const tools = [];
  if (actions && !message.deleted) {
    if (actions.mayEdit) tools.push(h('button', { type: 'button', class: 'link', onclick: actions.onEdit, 'aria-label': `Edit your message from ${timeOf(message.created_at)}` }, 'Edit'));
    if (actions.mayDelete) tools.push(h('button', { type: 'button', class: 'link danger', onclick: actions.onDelete, 'aria-label': `Delete the message from ${timeOf(message.created_at)}` }, 'Delete'));
  }
  return h(
    'li',
    { class: cls.join(' '), dataset: { id: message.id, version: message.version } },
    head,
    body,
    tools.length ? h('div', { class: 'msg-actions' }, tools) : null,
  );
}
