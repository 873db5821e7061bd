/**
 * The objects of a local R2 bucket, read from a stack's persisted state
 * (`wrangler dev --persist-to <dir>`) through wrangler's own
 * `getPlatformProxy`, which opens the same state as `wrangler dev` does:
 * the documented way for Node code to use local bindings, so no file
 * layout of the local simulator is assumed here.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { getPlatformProxy } from "wrangler";

export interface LocalR2Object {
  key: string;
  bytes: Uint8Array;
}

interface Bucket {
  list(options: { prefix?: string; cursor?: string }): Promise<{
    objects: { key: string }[];
    truncated: boolean;
    cursor?: string;
  }>;
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
  put(key: string, value: ArrayBuffer | Uint8Array): Promise<unknown>;
}

/**
 * Opens the bucket `bucketName` of the state in `persistTo` (the folder
 * given to `--persist-to`), runs `use` with it, and closes it again.
 */
export async function withLocalR2Bucket<T>(
  persistTo: string,
  bucketName: string,
  use: (bucket: Bucket) => Promise<T>,
): Promise<T> {
  // A configuration with only this bucket, so no Worker, Durable Object or queue of the stack starts here.
  const configDir = mkdtempSync(path.join(tmpdir(), "local-r2-"));
  const configPath = path.join(configDir, "wrangler.json");
  writeFileSync(
    configPath,
    JSON.stringify({
      name: "local-r2-reader",
      compatibility_date: "2026-01-01",
      r2_buckets: [{ binding: "BUCKET", bucket_name: bucketName }],
    }),
  );
  const proxy = await getPlatformProxy<{ BUCKET: Bucket }>({
    configPath,
    envFiles: [],
    // wrangler dev keeps its state under <persist-to>/v3; getPlatformProxy takes that folder.
    persist: { path: path.join(persistTo, "v3") },
    remoteBindings: false,
  });
  try {
    return await use(proxy.env.BUCKET);
  } finally {
    await proxy.dispose();
    rmSync(configDir, { recursive: true, force: true });
  }
}

/** Every object under `prefix`, in key order, with its bytes. */
export function readLocalR2Objects(
  persistTo: string,
  bucketName: string,
  prefix: string,
): Promise<LocalR2Object[]> {
  return withLocalR2Bucket(persistTo, bucketName, async (bucket) => {
    const keys: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await bucket.list({ prefix, ...(cursor ? { cursor } : {}) });
      keys.push(...page.objects.map((object) => object.key));
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
    const objects: LocalR2Object[] = [];
    for (const key of keys.sort()) {
      const object = await bucket.get(key);
      if (object) objects.push({ key, bytes: new Uint8Array(await object.arrayBuffer()) });
    }
    return objects;
  });
}
