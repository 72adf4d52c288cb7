"""The job's sandbox: operating-system isolation, the children it starts and watches, secrets kept out."""
