import path from "node:path";
import { describe, expect, it } from "vitest";
import { readWranglerVars } from "./wrangler-vars.ts";

describe("readWranglerVars", () => {
  it("reads the billing worker's [vars] and nothing of the other tables", () => {
    const vars = readWranglerVars(path.join(import.meta.dirname, "../../wrangler.toml"));
    expect(vars.USAGE_LOG_SHARDS).toBe("1");
    expect(vars.USAGE_LOG_TENANT_SHARDS).toBe("{}");
    expect(vars.USAGE_FLUSH_INTERVAL_MS).toBe("200");
    expect(vars.USAGE_RAW_QUEUES).toBe("8");
    expect(vars.INVOICE_SELLER_ADDRESS).toBe("1 Example Street|Example City|Country");
    expect(vars.binding).toBeUndefined();
    expect(vars.name).toBeUndefined();
  });
});
