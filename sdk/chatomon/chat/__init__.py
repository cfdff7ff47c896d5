"""The data assistant's side of a turn: the chat tools over the application's data.

`chatomon.chat.tools` holds the tools (search_managers, get_manager_schema, find_path,
query, aggregate, mutate) and `Toolset`, which the tool loop calls.
"""
