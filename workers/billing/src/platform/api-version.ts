export const API_VERSION = "1.0.0";
export const API_PREFIX = "/api/v1";
