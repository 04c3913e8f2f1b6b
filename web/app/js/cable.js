// A small ActionCable client (actioncable-v1-json) for /cable: a ticket from POST
// /stream_tickets, `welcome`, subscribe to EventsChannel, event frames. It reconnects with a new
// ticket after any close, and when the server's pings stop for longer than STALE_MS. After every
// (re)subscription it calls onLive(), so the caller can read GET /events from its last cursor:
// the socket has no replay.

import { post } from './api.js';

const IDENTIFIER = JSON.stringify({ channel: 'EventsChannel' });
const PROTOCOLS = ['actioncable-v1-json', 'actioncable-unsupported'];
/// Pings come every 3 s; two missed ones mean the connection is gone.
const STALE_MS = 7000;
const MAX_BACKOFF_MS = 10000;

export class Cable {
  /// onEvent(item): one feed item; onLive(): subscribed (again); onStatus(text): for people.
  constructor({ onEvent, onLive, onStatus }) {
    this.onEvent = onEvent;
    this.onLive = onLive;
    this.onStatus = onStatus;
    this.ws = null;
    this.stopped = true;
    this.failures = 0;
    this.lastFrame = 0;
    this.retry = null;
    this.watchdog = null;
  }

  start() {
    this.stopped = false;
    this.watchdog = setInterval(() => this.checkStale(), 1000);
    this.wake = () => {
      if (!this.ws && !this.stopped) this.connectNow();
    };
    window.addEventListener('online', this.wake);
    document.addEventListener('visibilitychange', this.wake);
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearInterval(this.watchdog);
    clearTimeout(this.retry);
    window.removeEventListener('online', this.wake);
    document.removeEventListener('visibilitychange', this.wake);
    this.ws?.close();
    this.ws = null;
  }

  connectNow() {
    clearTimeout(this.retry);
    this.retry = null;
    this.connect();
  }

  async connect() {
    if (this.stopped || this.ws) return;
    this.onStatus('Connecting…');
    let ticket;
    try {
      ticket = await post('/stream_tickets');
    } catch (e) {
      // 401 signs out (api.js); anything else is retried.
      if (e.status !== 401) this.scheduleRetry();
      return;
    }
    if (this.stopped || this.ws) return;
    const ws = new WebSocket(ticket.url, PROTOCOLS);
    this.ws = ws;
    this.lastFrame = Date.now();
    ws.onmessage = (e) => this.frame(ws, e.data);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (!this.stopped) {
        this.onStatus('Reconnecting…');
        this.scheduleRetry();
      }
    };
  }

  frame(ws, data) {
    this.lastFrame = Date.now();
    let f;
    try {
      f = JSON.parse(data);
    } catch {
      return;
    }
    switch (f.type) {
      case 'welcome':
        ws.send(JSON.stringify({ command: 'subscribe', identifier: IDENTIFIER }));
        break;
      case 'ping':
        break;
      case 'confirm_subscription':
        this.failures = 0;
        this.onStatus('');
        this.onLive();
        break;
      case 'reject_subscription':
        this.onStatus('Live updates are refused.');
        break;
      case 'disconnect':
        // Whatever the reason, a new ticket decides: a revoked session gets 401 there.
        ws.close();
        break;
      default:
        if (f.identifier === IDENTIFIER && f.message) this.onEvent(f.message);
    }
  }

  checkStale() {
    const ws = this.ws;
    if (ws && ws.readyState === WebSocket.OPEN && Date.now() - this.lastFrame > STALE_MS) {
      // A dead network may take long to report the close: let go of it now.
      this.ws = null;
      ws.close();
      this.onStatus('Reconnecting…');
      this.scheduleRetry();
    }
  }

  scheduleRetry() {
    if (this.stopped || this.retry) return;
    const wait = Math.min(MAX_BACKOFF_MS, 500 * 2 ** this.failures) * (0.75 + Math.random() / 2);
    this.failures += 1;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect();
    }, wait);
  }
}
