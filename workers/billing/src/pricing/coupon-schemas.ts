import { z } from "@hono/zod-openapi";

export const CouponCodeSchema = z
  .string({ message: "couponCode must be a string" })
  .trim()
  .regex(/^[A-Za-z0-9_-]{3,40}$/, "couponCode must be 3-40 letters, digits, - or _")
  .openapi({ example: "SAVE20" });
