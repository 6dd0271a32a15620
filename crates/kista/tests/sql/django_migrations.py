"""Django's migrations as a new project runs them (Debian's Django 3.2 on PyMySQL): `migrate`
of django.contrib.admin, auth, contenttypes and sessions (their migrations drop
django_content_type.name and widen auth's varchar columns: copying ALTERs of tables with
foreign keys on either side), then an app's models, rows through the ORM, a model change
that alters columns of a parent and a child table (`makemigrations`, `migrate`), and the
keys still holding after it.

Each command runs as `manage.py` would, in a process of its own: a changed models.py is
read afresh, as a developer's next command reads it.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import os
import subprocess
import sys
import tempfile

import pymysql

port = sys.argv[1]
project = tempfile.mkdtemp()
os.makedirs(os.path.join(project, "library", "migrations"))
for package in ("library", os.path.join("library", "migrations")):
    with open(os.path.join(project, package, "__init__.py"), "w"):
        pass
with open(os.path.join(project, "settings.py"), "w") as settings_file:
    settings_file.write(f'''
SECRET_KEY = "test"
DATABASES = {{"default": {{
    "ENGINE": "django.db.backends.mysql", "NAME": "site", "USER": "root",
    "PASSWORD": "", "HOST": "127.0.0.1", "PORT": "{port}"}}}}
INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
    "django.contrib.sessions", "django.contrib.messages", "library",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [{{
    "BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
    "OPTIONS": {{"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]}},
}}]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
''')

MODELS_BEFORE = '''
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=50, unique=True)


class Book(models.Model):
    title = models.CharField(max_length=50)
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
'''
# The change: the parent's key column widened, the child's column widened and made
# nullable, a column dropped from the child.
MODELS_AFTER = '''
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=200, unique=True)


class Book(models.Model):
    title = models.CharField(max_length=300, null=True)
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
'''


def write_models(source):
    with open(os.path.join(project, "library", "models.py"), "w") as models_file:
        models_file.write(source)


def django(*command):
    """Runs a management command as manage.py would; fails on any error."""
    code = (
        "import pymysql, sys; pymysql.install_as_MySQLdb(); "
        "import django; django.setup(); "
        "from django.core.management import execute_from_command_line; "
        "execute_from_command_line(['manage.py'] + sys.argv[1:])"
    )
    environment = dict(os.environ, DJANGO_SETTINGS_MODULE="settings", PYTHONPATH=project)
    done = subprocess.run(
        [sys.executable, "-c", code, *command], cwd=project, env=environment,
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def orm(statements):
    """Runs Python statements with the project's models imported; returns what they print."""
    code = (
        "import pymysql; pymysql.install_as_MySQLdb(); import django; django.setup(); "
        "from django.db import IntegrityError; from library.models import Author, Book\n"
        + statements
    )
    environment = dict(os.environ, DJANGO_SETTINGS_MODULE="settings", PYTHONPATH=project)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=environment,
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, f"{statements}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


setup = pymysql.connect(host="127.0.0.1", port=int(port), user="root", password="")
setup.cursor().execute("CREATE DATABASE site")

write_models(MODELS_BEFORE)
django("makemigrations", "library")
migrated = django("migrate")
assert "Applying contenttypes.0002_remove_content_type_name... OK" in migrated, migrated
assert "Applying auth.0012_alter_user_first_name_max_length... OK" in migrated, migrated
assert "Applying library.0001_initial... OK" in migrated, migrated
django("createsuperuser", "--noinput", "--username", "admin", "--email", "a@example.com")

cur = setup.cursor()
cur.execute("SELECT COUNT(*) FROM site.auth_permission")
assert cur.fetchone()[0] > 0, "auth's permissions, referencing django_content_type"

print(orm('''
ann = Author.objects.create(name="Ann")
Book.objects.create(title="First", author=ann)
Book.objects.create(title="Second", author=ann)
print("rows made")
'''))

write_models(MODELS_AFTER)
made = django("makemigrations", "library")
assert "0002" in made, made
migrated = django("migrate")
assert "Applying library.0002" in migrated, migrated
assert "No migrations to apply" in django("migrate")

cur.execute("SHOW CREATE TABLE site.library_book")
create = cur.fetchone()[1]
assert "`title` varchar(300)" in create, create
assert "FOREIGN KEY (`author_id`) REFERENCES `library_author` (`id`)" in create, create
cur.execute("SHOW CREATE TABLE site.library_author")
assert "`name` varchar(200)" in cur.fetchone()[1]

checked = orm('''
assert sorted(Book.objects.values_list("title", flat=True)) == ["First", "Second"]
try:
    Book.objects.create(title="Orphan", author_id=999)
    raise AssertionError("a book without its author was accepted")
except IntegrityError:
    pass
Book.objects.create(title=None, author=Author.objects.get(name="Ann"))
Author.objects.get(name="Ann").delete()
assert Book.objects.count() == 0
print("keys hold")
''')
assert "keys hold" in checked, checked

cur.execute("DROP DATABASE site")
print("django migrations ok")
