import { applyTestMigrations } from "@edge-platform/shared/testing/d1-migrations";

await applyTestMigrations();
