/**
 * Headless Debian Chromium (playwright-core) for the browser tests. Without
 * the browser the tests report themselves skipped on a developer machine;
 * under CI (CI=true) they run and fail, so CI cannot pass without them.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

const inCi = ["true", "1"].includes((process.env.CI ?? "").toLowerCase());
const available = existsSync(CHROMIUM);
if (!available && !inCi)
  console.warn(`[browser tests] skipped: ${CHROMIUM} not found (apt-get install -y chromium)`);

/** Whether the browser tests should be skipped: only without a browser, outside CI. */
export const skipBrowserTests = !available && !inCi;

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} not found: CI=true requires the browser (apt-get install -y chromium)`,
    );
  const profileDir = mkdtempSync(path.join(tmpdir(), "edge-chromium-"));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      // No name resolves except the local stack's: the network is cut off.
      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}
