// A ZIP archive written as a stream, store-only (no compression), with no library: each entry's bytes are
// read from its own stream as the archive is read, so memory holds one chunk and the central directory
// (under a hundred bytes per entry), whatever the files' sizes. CRC-32 and data descriptors (the CRC is
// known only once an entry is written), ZIP64 past 4 GiB or 65,535 entries, UTF-8 names, made on Unix.

const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
const FLAGS = 0x0808; // bit 3: sizes and CRC in a data descriptor; bit 11: UTF-8 names
// Made by Unix (high byte 3), to ZIP 4.5: Info-ZIP's unzip (Debian's) reads an MS-DOS archive's names as a
// DOS code page, whatever bit 11 says, and garbles any name past ASCII ("会議資料.pptx").
const MADE_BY = (3 << 8) | 45;
// A regular file (S_IFREG), rw-r--r--, in the high half: what unzip gives a file it makes from the entry.
const FILE_ATTRIBUTES = 0o100644 * 0x10000;
const encoder = new TextEncoder();

const CRC_TABLE = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

// The CRC-32 of `bytes` continued from `crc` (0 to start).
export function crc32(crc, bytes) {
  let c = ~crc;
  for (let i = 0; i < bytes.length; i += 1) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

// A name that unpacks inside the folder it is unpacked in, on Windows as on Unix. An S3 key is any string,
// and whoever may upload to the bucket chooses it: Windows' unzippers split at "\" as at "/" and read "C:"
// as a drive (`..\..\x.bat`, `C:\x.txt`, `C:x.txt` would land outside the folder). So both split, a drive
// is dropped from a segment's start, and a segment of dots and spaces alone goes (".", "..", and the ".. "
// Windows may trim to ".."), as do empty ones ("/x", "a//b").
export function safeName(name) {
  const parts = String(name)
    .split(/[\\/]/)
    .map((part) => part.replace(/^[A-Za-z]:/, ""))
    .filter((part) => !/^[.\s]*$/.test(part));
  return parts.join("/") || "file";
}

// How two names are the same file where the archive is unpacked: Windows' and macOS's file systems ignore
// case, macOS's Unicode's two ways of writing "é", and Windows a segment's trailing dots and spaces.
const sameFile = (path) => path.normalize("NFC").toLowerCase().replace(/[. ]+(?=\/|$)/g, "");

// `path` with " (n)" before its extension: "x.txt" -> "x (2).txt", "a/b" -> "a/b (2)", ".env" -> ".env (2)".
function numbered(path, n) {
  const slash = path.lastIndexOf("/") + 1;
  const dot = path.lastIndexOf(".");
  const at = dot > slash ? dot : path.length;
  return `${path.slice(0, at)} (${n})${path.slice(at)}`;
}

// Each entry's safe name, made unique within the archive: two keys can make one name ("a//b" and "a/b",
// "A.txt" and "a.txt"), and a file can be named as another entry's folder ("a" and "a/b"); unpacked, one
// would overwrite the other or fail. The first of a name keeps it; the others are numbered past every name
// the archive holds (so a key "x (2).txt" keeps its own). Folders are never renamed: they hold other files.
export function uniqueNames(names) {
  const paths = names.map(safeName);
  const folders = new Set();
  for (const path of paths) {
    const parts = path.split("/");
    for (let end = 1; end < parts.length; end += 1) folders.add(sameFile(parts.slice(0, end).join("/")));
  }
  const taken = new Set([...paths.map(sameFile), ...folders]);
  const kept = new Set();
  return paths.map((path) => {
    const key = sameFile(path);
    if (!kept.has(key) && !folders.has(key)) {
      kept.add(key);
      return path;
    }
    let n = 2;
    while (taken.has(sameFile(numbered(path, n)))) n += 1;
    const unique = numbered(path, n);
    taken.add(sameFile(unique));
    kept.add(sameFile(unique));
    return unique;
  });
}

function dosDateTime(date) {
  const d = date instanceof Date && !Number.isNaN(date.getTime()) ? date : new Date();
  const year = Math.min(Math.max(d.getFullYear(), 1980), 2107);
  return {
    time: (d.getHours() << 11) | (d.getMinutes() << 5) | (d.getSeconds() >> 1),
    date: ((year - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
  };
}

// Little-endian fields written one after another.
function record(fields) {
  const size = fields.reduce((sum, [bytes, value]) => sum + (bytes === "raw" ? value.length : bytes), 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const [bytes, value] of fields) {
    if (bytes === "raw") out.set(value, at);
    else if (bytes === 2) view.setUint16(at, value, true);
    else if (bytes === 4) view.setUint32(at, value, true);
    else view.setBigUint64(at, BigInt(value), true);
    at += bytes === "raw" ? value.length : bytes;
  }
  return out;
}

// Where each entry goes and how it is written, from the declared sizes alone: the archive's exact length is
// known before a byte is read (a download can then show its progress).
export function zipLayout(entries, { zip64 = "auto" } = {}) {
  let offset = 0;
  const paths = uniqueNames(entries.map((entry) => entry.name));
  const planned = entries.map((entry, index) => {
    const path = paths[index];
    const name = encoder.encode(path);
    const big = zip64 === "always" || entry.size >= MAX32 || offset >= MAX32;
    const local = 30 + name.length + (big ? 20 : 0);
    const descriptor = big ? 24 : 16;
    const central = 46 + name.length + (big ? 28 : 0);
    const placed = { ...entry, path, name, big, offset, local, descriptor, central };
    offset += local + entry.size + descriptor;
    return placed;
  });
  const directoryOffset = offset;
  const directorySize = planned.reduce((sum, entry) => sum + entry.central, 0);
  const end64 =
    zip64 === "always" || entries.length >= MAX16 || directoryOffset >= MAX32 || directorySize >= MAX32;
  const size = directoryOffset + directorySize + (end64 ? 56 + 20 : 0) + 22;
  return { planned, directoryOffset, directorySize, end64, size };
}

function localHeader(entry) {
  const { time, date } = dosDateTime(entry.date);
  return record([
    [4, 0x04034b50], [2, entry.big ? 45 : 20], [2, FLAGS], [2, 0], [2, time], [2, date],
    [4, 0], [4, entry.big ? MAX32 : 0], [4, entry.big ? MAX32 : 0],
    [2, entry.name.length], [2, entry.big ? 20 : 0], ["raw", entry.name],
    ...(entry.big ? [[2, 1], [2, 16], [8, 0], [8, 0]] : []),
  ]);
}

function descriptor(entry, crc) {
  const size = entry.big ? 8 : 4;
  return record([[4, 0x08074b50], [4, crc], [size, entry.size], [size, entry.size]]);
}

function centralHeader(entry, crc) {
  const { time, date } = dosDateTime(entry.date);
  const big = entry.big;
  return record([
    [4, 0x02014b50], [2, MADE_BY], [2, big ? 45 : 20], [2, FLAGS], [2, 0], [2, time], [2, date],
    [4, crc], [4, big ? MAX32 : entry.size], [4, big ? MAX32 : entry.size],
    [2, entry.name.length], [2, big ? 28 : 0], [2, 0], [2, 0], [2, 0], [4, FILE_ATTRIBUTES],
    [4, big ? MAX32 : entry.offset], ["raw", entry.name],
    ...(big ? [[2, 1], [2, 24], [8, entry.size], [8, entry.size], [8, entry.offset]] : []),
  ]);
}

function endRecords(layout, count) {
  const { directoryOffset, directorySize, end64 } = layout;
  const end = [];
  if (end64) {
    const at = directoryOffset + directorySize;
    end.push(
      record([
        [4, 0x06064b50], [8, 44], [2, 45], [2, 45], [4, 0], [4, 0],
        [8, count], [8, count], [8, directorySize], [8, directoryOffset],
      ]),
      record([[4, 0x07064b50], [4, 0], [8, at], [4, 1]]),
    );
  }
  end.push(
    record([
      [4, 0x06054b50], [2, 0], [2, 0], [2, end64 ? MAX16 : count], [2, end64 ? MAX16 : count],
      [4, end64 ? MAX32 : directorySize], [4, end64 ? MAX32 : directoryOffset], [2, 0],
    ]),
  );
  return end;
}

// The archive's parts in order. `open(entry)` gives the entry's bytes as a ReadableStream; each is read to
// its end before the next is opened. An entry whose bytes are not its declared size stops the archive.
async function* zipParts(layout, open) {
  const directory = [];
  for (const entry of layout.planned) {
    yield localHeader(entry);
    const reader = (await open(entry)).getReader();
    let crc = 0;
    let read = 0;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        read += value.length;
        if (read > entry.size) break;
        crc = crc32(crc, value);
        yield value;
      }
    } finally {
      reader.cancel().catch(() => {});
    }
    if (read !== entry.size) {
      throw new Error(`${entry.path} changed while it was being zipped (${read} bytes, not ${entry.size})`);
    }
    yield descriptor(entry, crc);
    directory.push(centralHeader(entry, crc));
  }
  yield* directory;
  yield* endRecords(layout, layout.planned.length);
}

// The archive as a ReadableStream that reads its entries only as fast as it is read (one part at a time).
// `entries`: [{name, size, date}]; `open(entry)`: a promise of the entry's bytes as a ReadableStream.
export function zipStream(entries, open, options = {}) {
  const layout = zipLayout(entries, options);
  const parts = zipParts(layout, open);
  const stream = new ReadableStream(
    {
      async pull(controller) {
        const { value, done } = await parts.next();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      async cancel() {
        await parts.return();
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, size: layout.size };
}
