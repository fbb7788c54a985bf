"""The read path: one file by key and the lists of a user or a bucket (`reader`), and the name, folder
and extension lists (`name_reader`, `folder_reader`, `term_reader`).

Builds on `file_index.store` and `file_index.rules`; never imports `file_index.write`."""
