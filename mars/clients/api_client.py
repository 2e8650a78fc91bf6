"""`MarsApiClient`: a small typed HTTP client of the REST API (used by the `mars task` CLI)."""

from __future__ import annotations

from typing import Any

import httpx


class ApiCallError(Exception):
    """The API answered with an error (or could not be reached: `status` 0)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        position: int | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.position = position
        self.line = line
        self.column = column

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiCallError:
        try:
            detail = response.json()["error"]
            return cls(
                response.status_code,
                str(detail["message"]),
                position=detail.get("position"),
                line=detail.get("line"),
                column=detail.get("column"),
            )
        except (ValueError, KeyError, TypeError):
            return cls(response.status_code, response.text or response.reason_phrase)


class MarsApiClient:
    """Calls the API at `base_url` with the bearer `token` on every request."""

    def __init__(self, *, base_url: str, token: str, timeout_s: float = 30.0) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout_s,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MarsApiClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiCallError(0, f"cannot reach the API at {self._http.base_url}: {exc}") from exc
        if response.is_error:
            raise ApiCallError.from_response(response)
        return response.json() if response.content else None

    def create_task(
        self,
        sql: str,
        *,
        task_id: str | None = None,
        options: dict[str, Any] | None = None,
        paused: bool = False,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"sql": sql, "status": "PAUSED" if paused else "RUNNING"}
        if task_id is not None:
            body["id"] = task_id
        if options:
            body["options"] = options
        result: dict[str, Any] = self._call("POST", "/tasks", json=body)
        return result

    def list_tasks(self) -> list[dict[str, Any]]:
        tasks: list[dict[str, Any]] = self._call("GET", "/tasks")["tasks"]
        return tasks

    def get_task(self, task_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/tasks/{task_id}")
        return result

    def pause_task(self, task_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", f"/tasks/{task_id}/pause")
        return result

    def resume_task(self, task_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", f"/tasks/{task_id}/resume")
        return result

    def set_preaggregation(self, task_id: str, preaggregation: str) -> dict[str, Any]:
        """Hand the task's live pre-aggregation to "mappers" or "spark"."""
        body = {"preaggregation": preaggregation}
        result: dict[str, Any] = self._call("PATCH", f"/tasks/{task_id}", json=body)
        return result

    def set_buckets(self, task_id: str, buckets: int) -> dict[str, Any]:
        """Change the task's bucket count for the windows after those written so far."""
        result: dict[str, Any] = self._call("PATCH", f"/tasks/{task_id}", json={"buckets": buckets})
        return result

    def explain_query(self, sql: str, *, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """The plan of a query that is not registered."""
        body: dict[str, Any] = {"sql": sql, "options": options} if options else {"sql": sql}
        result: dict[str, Any] = self._call("POST", "/explain", json=body)
        return result

    def replace_task(
        self,
        task_id: str,
        sql: str,
        *,
        options: dict[str, Any] | None = None,
        restart: bool = False,
    ) -> dict[str, Any]:
        """Replace the task's query (`restart`: from scratch, when it is not compatible)."""
        body: dict[str, Any] = {"sql": sql, "options": options} if options else {"sql": sql}
        params = {"restart": "true"} if restart else None
        result: dict[str, Any] = self._call("PUT", f"/tasks/{task_id}", json=body, params=params)
        return result

    def rewind_task(
        self, task_id: str, from_time: str | None = None, *, offsets: dict[int, int] | None = None
    ) -> dict[str, Any]:
        """Recompute the task's windows from `from_time` (ISO-8601) or from the event times at
        `offsets` (partition -> offset); the rewind begun."""
        body: dict[str, Any] = (
            {"from": from_time}
            if offsets is None
            else {"offsets": {str(p): o for p, o in offsets.items()}}
        )
        result: dict[str, Any] = self._call("POST", f"/tasks/{task_id}/rewind", json=body)
        return result

    def explain_task(self, task_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/tasks/{task_id}/explain")
        return result

    def delete_task(self, task_id: str, *, delete_topics: bool = False) -> None:
        params = {"delete_topics": "true"} if delete_topics else None
        self._call("DELETE", f"/tasks/{task_id}", params=params)

    def results(self, task_id: str, *, limit: int = 50) -> list[dict[str, Any]]:
        answer = self._call("GET", f"/tasks/{task_id}/results", params={"limit": limit})
        rows: list[dict[str, Any]] = answer["results"]
        return rows

    def current_windows(
        self,
        task_id: str,
        *,
        groups: dict[str, str] | None = None,
        window_start: int | None = None,
    ) -> dict[str, Any]:
        """`GET /tasks/{id}/windows`: current values of open windows (pull query)."""
        params: dict[str, Any] = {f"group.{k}": v for k, v in (groups or {}).items()}
        if window_start is not None:
            params["window_start"] = window_start
        answer: dict[str, Any] = self._call("GET", f"/tasks/{task_id}/windows", params=params)
        return answer

    def cluster(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/cluster")
        return result
