/**
 * The benchmarks' external baseline: a Node HTTP server that answers every
 * request with 200 "ok" and does no I/O. bench/lib/external-baseline.ts
 * starts it in a process of its own and measures it with autocannon, so that
 * the machine's speed is read outside the process a benchmark measures (a
 * slowdown of that whole process then shows against it instead of cancelling
 * out). Prints its port on stdout once it listens, and exits when its
 * standard input closes (the benchmark is gone) or on SIGTERM.
 */
import { createServer } from "node:http";

const server = createServer((_request, response) => {
  response.writeHead(200, { "content-type": "text/plain" });
  response.end("ok");
});

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${typeof address === "object" && address ? address.port : 0}\n`);
});

process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
