/** Reported by /v1/health and the OpenAPI document. */
export const SERVICE_VERSION = "1.0.0";
