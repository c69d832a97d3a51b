-- luacheck (Debian package lua-check), run by ctest as style/luacheck over every Lua file.
std = "lua54"
max_code_line_length = 100
max_comment_line_length = 100
-- lines inside [[long strings]] are text kevo writes out (HTML, C, Python, Markdown templates):
-- their length is the output's, not the code's
max_string_line_length = false
-- callbacks keep the signature their caller documents (run(ctx, opts), on_progress(ctx), ...)
unused_args = false
-- tests/escape/: hostile strategies that break the rules on purpose (the sandbox must hold)
exclude_files = {"build*/", ".venv/", "tests/escape/"}
-- tests reuse short names (r, v, msg, code) across their steps and keep handles alive with
-- `local h <close>` they never read
files["tests/"] = {ignore = {"421", "311", "211"}}
