export { consoleRoutes } from "./routes.ts";
