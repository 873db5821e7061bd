/*
 * A per-tenant shard count read from two settings: a default for every
 * tenant, and JSON overrides per tenant id, each a count (`{"<tenant>": 8}`)
 * or, after a change, `{"<tenant>": {"shards": 8, "previous": 1}}`. The
 * usage log's shards (USAGE_LOG_SHARDS, USAGE_LOG_TENANT_SHARDS) and the
 * counter's shards (USAGE_COUNTER_SHARDS, USAGE_COUNTER_TENANT_SHARDS) are
 * both set this way.
 */

export interface TenantShards {
  shards: number;
  /** The count before the latest change, while both still matter. */
  previous?: number;
}

function clamp(value: unknown, max: number): number | undefined {
  const number = Number(value);
  if (!Number.isFinite(number) || number < 1) return undefined;
  return Math.min(max, Math.floor(number));
}

/** Parsed overrides by their text: settings are read on every request and rarely change. */
const parsedOverrides = new Map<string, Record<string, unknown>>();

/** The JSON overrides; text that is not a JSON object is logged (by its setting's name) and ignored. */
function overridesOf(text: string | undefined, settingName: string): Record<string, unknown> {
  const cached = parsedOverrides.get(text ?? "");
  if (cached) return cached;
  const parsed = parseOverrides(text, settingName);
  if (parsedOverrides.size > 16) parsedOverrides.clear();
  parsedOverrides.set(text ?? "", parsed);
  return parsed;
}

function parseOverrides(text: string | undefined, settingName: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || "{}");
    if (parsed && typeof parsed === "object") return parsed as Record<string, unknown>;
  } catch {
    // reported below
  }
  console.error(
    JSON.stringify({ level: "error", msg: `${settingName} is not a JSON object; ignored` }),
  );
  return {};
}

export function tenantShardSetting(
  setting: {
    defaultCount: string | undefined;
    overrides: string | undefined;
    overridesName: string;
    max: number;
  },
  tenantId: string,
): TenantShards {
  const fallback = clamp(setting.defaultCount, setting.max) ?? 1;
  const entry = overridesOf(setting.overrides, setting.overridesName)[tenantId];
  if (entry && typeof entry === "object") {
    const { shards, previous } = entry as Record<string, unknown>;
    const count = clamp(shards, setting.max) ?? fallback;
    const before = clamp(previous, setting.max);
    return before !== undefined && before !== count
      ? { shards: count, previous: before }
      : { shards: count };
  }
  return { shards: clamp(entry, setting.max) ?? fallback };
}
