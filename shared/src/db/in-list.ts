import { type Column, type SQL, sql } from "drizzle-orm";

/**
 * `column IN (values)` with the whole list as one bound parameter (a JSON
 * array read by json_each): D1 refuses statements with more than 100 bound
 * parameters, which a page of ids plus a filter or two can pass.
 */
export function inList(column: Column, values: readonly (string | number)[]): SQL {
  return sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;
}
