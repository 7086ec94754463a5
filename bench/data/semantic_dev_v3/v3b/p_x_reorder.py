PAIRS = [
("Create a Dockerfile that uses python:3.12, installs requirements.txt, and runs app.py", "Write a Dockerfile: run app.py, install from requirements.txt, base image python:3.12"),
("Add logging, error handling and retries to the fetch function", "add retries, error handling and logging to the fetch function"),
("Delete the temp branch locally and on the remote", "remove the temp branch from the remote and from my local repo"),
("Query orders placed in 2023 with status shipped, grouped by country", "group by country: orders with status shipped that were placed in 2023"),
("Open ports 80 and 443 on the firewall and close port 22 to the public", "close port 22 to the public and open 443 and 80 on the firewall"),
("Set the memory limit to 512Mi and the CPU limit to 500m for the worker", "for the worker, CPU limit 500m and memory limit 512Mi"),
("Write a Python function that takes a URL and a timeout and returns the status code", "Python function returning the status code; parameters: a timeout and a URL"),
("Rotate the database password and update it in the secrets manager and the app config", "update the app config and the secrets manager after rotating the database password"),
]
