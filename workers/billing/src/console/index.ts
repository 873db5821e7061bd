// The console capability's only entry for the rest of the worker (what it owns: README.md).
export { consoleRoutes } from "./routes.ts";
