// The page's service worker, for one thing only: a zip the page makes is saved as a download, streamed to
// disk as it is made (memory holds a chunk, not the archive). Its scope is zip/ alone, so the page itself
// is never controlled by it and its first load never waits for it.
//
// The page posts {type: "zip", id, name, size} with a MessagePort, then opens zip/{id}/{name}; this worker
// answers that download with a stream that asks the page, over the port, for one chunk at a time.

const jobs = new Map();

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("message", (event) => {
  const data = event.data || {};
  if (data.type !== "zip" || !event.ports[0]) return; // "keep-alive": the message itself is the point
  jobs.set(data.id, { port: event.ports[0], name: data.name, size: data.size });
  event.ports[0].postMessage({ type: "ready" });
});

function attachment(name) {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  const match = /\/zip\/([\w-]+)\/[^/]*$/.exec(url.pathname);
  if (url.origin !== self.location.origin || !match) return;
  const job = jobs.get(match[1]);
  jobs.delete(match[1]);
  // Gone (the worker was restarted, or the address opened twice): 204 leaves the page where it is.
  if (!job) {
    event.respondWith(new Response(null, { status: 204 }));
    return;
  }
  const { port } = job;
  const stream = new ReadableStream(
    {
      pull(controller) {
        return new Promise((resolve) => {
          port.onmessage = ({ data }) => {
            if (data.type === "chunk") controller.enqueue(new Uint8Array(data.chunk));
            else if (data.type === "done") controller.close();
            else controller.error(new Error(data.message || "the zip could not be made"));
            resolve();
          };
          port.postMessage({ type: "pull" });
        });
      },
      cancel() {
        port.postMessage({ type: "cancel" });
      },
    },
    { highWaterMark: 1 },
  );
  event.respondWith(
    new Response(stream, {
      headers: {
        "Content-Type": "application/zip",
        "Content-Disposition": attachment(job.name),
        "Content-Length": String(job.size),
        "X-Content-Type-Options": "nosniff",
      },
    }),
  );
});
