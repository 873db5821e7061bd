export * from "./billing.ts";
export * from "./catalog.ts";
export * from "./identity.ts";
export * from "./subscriptions.ts";
export * from "./usage.ts";
export * from "./usage-aggregates.ts";
export * from "./usage-archive.ts";
export * from "./usage-events.ts";
