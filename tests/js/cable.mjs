// Rails' own ActionCable client against agora's /cable. Prints one JSON line per happening:
// {"event":"connected"}, {"event":"received","data":...}, {"event":"disconnected"}, {"event":"rejected"}.
// Usage: node cable.mjs <ws url with ticket>
import WebSocket from "ws";

globalThis.WebSocket = WebSocket;
globalThis.addEventListener = () => {};
globalThis.removeEventListener = () => {};

const { createConsumer, adapters } = await import("@rails/actioncable");
adapters.logger = { log: (...args) => console.error("[actioncable]", ...args) };

const url = process.argv[2];
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const consumer = createConsumer(url);
consumer.subscriptions.create({ channel: "EventsChannel" }, {
  connected() { say({ event: "connected" }); },
  disconnected() { say({ event: "disconnected" }); },
  rejected() { say({ event: "rejected" }); },
  received(data) { say({ event: "received", data }); },
});
// The test ends this process; stop by ourselves after a minute at most.
setTimeout(() => { consumer.disconnect(); process.exit(0); }, 60_000);
