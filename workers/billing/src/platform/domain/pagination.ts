export interface PageRequest {
  page: number;
  limit: number;
}

export interface PageMeta extends PageRequest {
  total: number;
  totalPages: number;
}

export function pageMeta(request: PageRequest, total: number): PageMeta {
  return { ...request, total, totalPages: Math.ceil(total / request.limit) };
}

export function pageOffset(request: PageRequest): number {
  return (request.page - 1) * request.limit;
}
