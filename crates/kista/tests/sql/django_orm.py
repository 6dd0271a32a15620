"""Django (Debian's 3.2) on PyMySQL: migrate an app's models (no foreign keys until issue
25), CRUD through the ORM, __startswith (LIKE BINARY), aggregation,
date lookups, transaction.atomic with a nested block rolled back to its savepoint,
introspection. (`__istartswith`, which Django sends as a plain LIKE that MySQL's
case-insensitive default collation answers, waits for collations.)

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import os
import sys
import tempfile
from decimal import Decimal

import pymysql

pymysql.install_as_MySQLdb()

# The app is a package written at run time: Django imports apps by name.
app_root = tempfile.mkdtemp()
os.makedirs(os.path.join(app_root, "shop"))
with open(os.path.join(app_root, "shop", "__init__.py"), "w"):
    pass
with open(os.path.join(app_root, "shop", "models.py"), "w") as models_file:
    models_file.write('''
from django.db import models


class Product(models.Model):
    name = models.CharField(max_length=60, db_index=True)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    added = models.DateTimeField(auto_now_add=True)
    sku = models.CharField(max_length=20, unique=True, null=True)
''')
sys.path.insert(0, app_root)

import django
from django.conf import settings

port = sys.argv[1]
setup = pymysql.connect(host="127.0.0.1", port=int(port), user="root", password="")
setup.cursor().execute("CREATE DATABASE shop")
settings.configure(
    DATABASES={"default": {
        "ENGINE": "django.db.backends.mysql", "NAME": "shop", "USER": "root",
        "PASSWORD": "", "HOST": "127.0.0.1", "PORT": port}},
    INSTALLED_APPS=["shop"],
    USE_TZ=True,
    DEFAULT_AUTO_FIELD="django.db.models.AutoField",
)
django.setup()

from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.db.models import Sum

from shop.models import Product

call_command("migrate", run_syncdb=True, verbosity=0)
assert sorted(connection.introspection.table_names()) == ["django_migrations", "shop_product"]

Product.objects.create(name="Banana", price="1.50", sku="B1")
Product.objects.create(name="bread", price="2.25")
Product.objects.create(name="Apple", price="0.75")
assert [p.name for p in Product.objects.filter(name__startswith="B")] == ["Banana"]
assert Product.objects.aggregate(total=Sum("price"))["total"] == Decimal("4.50")
Product.objects.filter(name="Apple").update(price="0.80")
assert Product.objects.get(name="Apple").price == Decimal("0.80")
assert Product.objects.filter(added__year__gte=2000).count() == 3

# A nested atomic block is a savepoint: its rollback keeps the outer block's work.
with transaction.atomic():
    Product.objects.create(name="cherry", price="3.00")
    try:
        with transaction.atomic():
            Product.objects.filter(name="bread").delete()
            raise RuntimeError("roll the inner block back")
    except RuntimeError:
        pass
assert sorted(Product.objects.values_list("name", flat=True)) == [
    "Apple", "Banana", "bread", "cherry"]

# A duplicate unique value is an IntegrityError (1062).
try:
    Product.objects.create(name="other", price="1.00", sku="B1")
    raise AssertionError("a duplicate sku was accepted")
except IntegrityError:
    pass
Product.objects.filter(name="cherry").delete()
assert Product.objects.count() == 3

print("django ok")
