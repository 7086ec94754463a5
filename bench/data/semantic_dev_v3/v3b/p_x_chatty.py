PAIRS = [
("Why is my npm install failing with EACCES?", "ugh sorry if this is dumb but npm install keeps dying with EACCES 😫 why??"),
("Explain the difference between git fetch and git pull", "hey! new to the team and everyone keeps saying fetch vs pull lol, what's the difference between git fetch and git pull?"),
("Write a Python script that renames files by their creation date", "hiya, my photos folder is a total mess 😅 could you write a python script that renames files by their creation date? thanks!!"),
("How do I free up space on my Mac?", "omg my mac says disk is almost full AGAIN 🙃 how do i free up space"),
("Set up a Postgres container with docker-compose", "heyy, trying to get my side project going this weekend, could u set up a postgres container with docker-compose for me? ty"),
("What does this error mean: ModuleNotFoundError: No module named 'requests'", "Hi! Sorry to bug you, I'm following a tutorial and got this: ModuleNotFoundError: No module named 'requests' — what does it mean?"),
("Add pagination to the /users endpoint", "morning ☕ product wants pagination on /users by EOD lol, can you add it?"),
("How do I connect my printer to Wi-Fi?", "helloo, my dad just gave me his old printer and i have no clue lol, how do i get it on the wifi?"),
("Review this pull request for security issues", "hey, would you mind giving this PR a look for security problems? kinda paranoid about it tbh 😬"),
("Explain what an API is", "hi, I'm a marketing person and devs keep saying 'API' in meetings 😂 what is an API actually?"),
("How do I recover a deleted file in Google Drive?", "AAAH i accidentally deleted a file in google drive 😱 how do i get it back"),
("Write a cron expression for every Monday at 9am", "quick one, sorry — cron expression for every monday at 9am? always forget these lol"),
]
