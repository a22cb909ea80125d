-- GET /api/v1/tasks lists an account's tasks of every kind, newest first (tasks_user_kind_created serves one kind).
create index tasks_user_created on tasks (user_id, created_at desc, id desc);
