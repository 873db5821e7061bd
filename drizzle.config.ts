import { defineConfig } from "drizzle-kit";

// `npx drizzle-kit generate --name <change>` writes the next D1 migration
// into migrations/ from the schema in shared/src/db/schema.
export default defineConfig({
  dialect: "sqlite",
  schema: "./shared/src/db/schema/index.ts",
  out: "./migrations",
});
