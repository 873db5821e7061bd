export * from "./identity.ts";
export * from "./usage.ts";
